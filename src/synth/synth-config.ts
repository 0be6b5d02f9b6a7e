/**
 * The validated configuration of a synthesis run (zod, strict). The defining part (input,
 * teacher, model, stages, thresholds, prompts) is saved in `DIR/synth-run.json`; `--resume`
 * refuses a run whose defining configuration differs, since the journal's answers would
 * belong to other requests.
 */
import { z } from 'zod';
import { DEFAULT_NGRAM } from '../eval/decontamination.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { SYNTH_STAGES } from './synth-record.ts';

export const synthConfigSchema = z
  .object({
    input: z.string().min(1),
    fields: z
      .object({ id: z.string(), problem: z.string(), solution: z.string(), answer: z.string() })
      .strict(),
    teacher: z.string().min(1),
    model: z.string().min(1),
    stages: z.array(z.enum(SYNTH_STAGES)).default([...SYNTH_STAGES]),
    ngram: z.number().int().positive().default(DEFAULT_NGRAM),
    decontaminate: z.array(z.string()).default([]),
    /** The benchmark folder whose `*.jsonl` files are indexed; null = none found. */
    dataDir: z.string().nullable().default(null),
    prompt: z.string().nullable().default(null),
    onMismatch: z.enum(['drop', 'regenerate']).default('drop'),
    maxTrivialLines: z.number().int().nonnegative().default(1),
    maxTrivialDepth: z.number().int().nonnegative().default(6),
    trivialConstantBelow: z.number().nonnegative().default(100),
    trivial: z.enum(['to-text', 'drop']).default('to-text'),
    maxTokens: z.number().int().positive().default(4096),
    temperature: z.number().min(0).default(0.6),
    /** Not defining: may change on resume. */
    concurrency: z.number().int().positive().default(8),
    ratePerMinute: z.number().nonnegative().default(0),
    timeoutMs: z.number().int().positive().default(20_000),
    limit: z.number().int().positive().nullable().default(null),
    priceInputPerMillion: z.number().nonnegative().default(0),
    priceOutputPerMillion: z.number().nonnegative().default(0),
  })
  .strict();

export type SynthConfig = z.infer<typeof synthConfigSchema>;
export type SynthConfigInput = z.input<typeof synthConfigSchema>;

/** Keys that may differ between a run and its resumption. */
const NOT_DEFINING = new Set([
  'concurrency',
  'ratePerMinute',
  'limit',
  'priceInputPerMillion',
  'priceOutputPerMillion',
]);

/** The part of the configuration that defines the run's requests and results. */
export function definingConfig(config: SynthConfig): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).filter(([key]) => !NOT_DEFINING.has(key)));
}

export function resolveSynthConfig(input: unknown): SynthConfig {
  const parsed = synthConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AgentMathError(
      'SYNTH_CONFIG_INVALID',
      `synth config: "${issue?.path.join('.') || '(root)'}": ${issue?.message}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

/** Parses `--stages format,executability`; `all` and `none` are accepted. */
export function parseStages(text: string | undefined): (typeof SYNTH_STAGES)[number][] | undefined {
  if (text === undefined) return undefined;
  if (text.trim() === 'all') return [...SYNTH_STAGES];
  if (text.trim() === 'none') return [];
  const names = text
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  for (const name of names) {
    if (!(SYNTH_STAGES as readonly string[]).includes(name)) {
      throw new AgentMathError(
        'CLI_BAD_OPTION',
        `--stages: unknown stage "${name}"; stages are ${SYNTH_STAGES.join(', ')} (or all, none)`,
      );
    }
  }
  return names as (typeof SYNTH_STAGES)[number][];
}
