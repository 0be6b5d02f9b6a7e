/**
 * What a model folder declares about how it is prompted: `training-prompt.json`, `{prompt,
 * dialect}`, the prompt builder and code-block dialect it was (or, for a new byte model, will
 * be) trained with. `train sft` writes it beside the model it exports, the trainer's export
 * carries it to every later export, and the commands that prompt a model (`train sft`, `train
 * rl`, the quickstart) take their defaults from it, so a model is prompted as it was trained.
 * A folder without one (a pretrained model) declares nothing.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { AgentMathError } from '../shared/agentmath-error.ts';

export const TRAINING_PROMPT_FILE = 'training-prompt.json';

const trainingPromptSchema = z
  .object({
    prompt: z.enum(['instructed', 'text-only', 'problem-only']),
    dialect: z.enum(['tags', 'markdown']),
  })
  .strict();

export type TrainingPrompt = z.infer<typeof trainingPromptSchema>;

/** The folder's declaration, or null when it has none; an unreadable one is an error naming the file. */
export async function readTrainingPrompt(folder: string): Promise<TrainingPrompt | null> {
  const path = join(folder, TRAINING_PROMPT_FILE);
  if (!existsSync(path)) return null;
  const parsed = trainingPromptSchema.safeParse(JSON.parse(await readFile(path, 'utf8').catch(() => 'null')));
  if (!parsed.success) {
    throw new AgentMathError(
      'TRAINING_PROMPT_INVALID',
      `${path}: expected {"prompt": "instructed|text-only|problem-only", "dialect": "tags|markdown"}`,
    );
  }
  return parsed.data;
}

export async function writeTrainingPrompt(folder: string, declared: TrainingPrompt): Promise<void> {
  await writeFile(join(folder, TRAINING_PROMPT_FILE), `${JSON.stringify(declared, null, 2)}\n`);
}
