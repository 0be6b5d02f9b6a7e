/**
 * `config.json` of a held-out evaluation's run folder under `train rl`
 * (`eval-runs/step-NNNNN/`): the engine that served the policy, budgets, sampling and dialect,
 * beside the evaluation runner's own fields (docs/records.md). Its `trajectories.jsonl` and
 * `summary.json` are those of any evaluation.
 */
import { z } from 'zod';
import { evalRunnerConfigShape, recordedBudgetsSchema, recordedSamplingSchema } from '../eval/index.ts';

export const heldOutEvalConfigSchema = z
  .object({
    engine: z
      .object({
        api: z
          .enum(['sglang', 'vllm'])
          .meta({ description: "the API spoken: the run's (SGLang's routes, or vLLM's with token ids)" }),
        url: z.string().meta({ description: 'the engine that served the policy evaluated' }),
      })
      .strict()
      .meta({ description: 'the engine evaluated' }),
    budgets: recordedBudgetsSchema,
    sampling: recordedSamplingSchema,
    dialect: z
      .enum(['tags', 'markdown'])
      .meta({ description: 'the code-block markup of prompts and answers' }),
    ...evalRunnerConfigShape,
  })
  .strict();

/** What `config.json` of a held-out evaluation holds. */
export type HeldOutEvalConfig = z.infer<typeof heldOutEvalConfigSchema>;
