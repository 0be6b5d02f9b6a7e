/**
 * The state file of an SFT run (`DIR/sft-state.json`): the resolved configuration, the step
 * counter, the counters a report needs, and the folder of the last checkpoint. Written
 * atomically (temporary file, then rename) right after each checkpoint, so the state never
 * points at a checkpoint that is not complete.
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { sftConfigSchema } from './sft-config.ts';

export const SFT_STATE_FILE = 'sft-state.json';

const lossPointSchema = z
  .object({ step: z.number().int(), loss: z.number(), learningRate: z.number() })
  .strict();

export const sftStateSchema = z
  .object({
    version: z.literal(1),
    config: sftConfigSchema,
    /** Optimizer steps done. */
    step: z.number().int().nonnegative(),
    /** The schedule's length, fixed once a `maxMinutes` run has measured its step time. */
    totalSteps: z.number().int().positive(),
    /** Input tokens sent (prompt + response, no padding) and the trained ones among them. */
    tokens: z.number().int().nonnegative(),
    trainedTokens: z.number().int().nonnegative(),
    /** Time spent in training steps, over all sessions of the run. */
    trainWallMs: z.number().nonnegative(),
    /** Folder of the last checkpoint, relative to the run folder; null before the first. */
    checkpoint: z.string().nullable(),
    history: z.array(lossPointSchema),
  })
  .strict();

export type SftState = z.infer<typeof sftStateSchema>;
export type LossPoint = z.infer<typeof lossPointSchema>;

/** The state file is unreadable or describes another kind of run. */
export class SftStateError extends AgentMathError {
  constructor(file: string, detail: string, options?: { cause?: unknown }) {
    super('SFT_STATE_INVALID', `${file}: ${detail}`, options);
  }
}

/** Reads `DIR/sft-state.json`; null when there is none. */
export async function readSftState(dir: string): Promise<SftState | null> {
  const file = join(dir, SFT_STATE_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new SftStateError(file, 'not JSON', { cause: error });
  }
  const parsed = sftStateSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new SftStateError(file, `field "${issue?.path.join('.')}": ${issue?.message}`, {
      cause: parsed.error,
    });
  }
  return parsed.data;
}

/** Writes the state atomically. */
export async function writeSftState(dir: string, state: SftState): Promise<void> {
  const file = join(dir, SFT_STATE_FILE);
  const temporary = `${file}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`);
  await rename(temporary, file);
}
