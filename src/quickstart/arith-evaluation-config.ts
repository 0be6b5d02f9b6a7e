/**
 * `config.json` of a quickstart's evaluation run folder (`eval/baseline`, `eval/sft`,
 * `eval/rl` of `quickstart --model`; the byte quickstart's per style): the model, prompt,
 * dialect and agent settings, beside the evaluation runner's own fields (docs/records.md).
 * Its `trajectories.jsonl` and `summary.json` are those of any evaluation.
 */
import { z } from 'zod';
import { evalRunnerConfigShape, recordedBudgetsSchema, recordedSamplingSchema } from '../eval/index.ts';

const evaluationStage = z.enum(['baseline', 'sft', 'sft-text', 'rl', 'sft@rl-split', 'rl@rl-split']);
/** A quickstart evaluation's name. */
export type EvaluationStage = z.infer<typeof evaluationStage>;

export const arithEvaluationConfigSchema = z
  .object({
    command: z
      .enum(['quickstart', 'quickstart --model'])
      .meta({ description: 'the command that wrote the run' }),
    stage: evaluationStage.optional().meta({
      description:
        'the evaluation: the model (baseline, sft, sft-text, rl) on held-out arith, or @rl-split on the RL problems’ held-out split',
    }),
    style: z
      .enum(['tool', 'text', 'tool-rl'])
      .optional()
      .meta({ description: 'older quickstarts of the byte model: the model evaluated (now `stage`)' }),
    model: z.string().meta({ description: 'the model folder evaluated' }),
    dialect: z
      .enum(['tags', 'markdown'])
      .meta({ description: 'the code-block markup of prompts and answers' }),
    prompt: z
      .enum(['instructed', 'text-only', 'problem-only'])
      .meta({ description: 'how a problem becomes the prompt' }),
    agent: z
      .object({ budgets: recordedBudgetsSchema, sampling: recordedSamplingSchema })
      .strict()
      .meta({ description: "the agent loop's budgets and sampling (greedy)" }),
    ...evalRunnerConfigShape,
  })
  .strict();

/** What `config.json` of a quickstart evaluation holds. */
export type ArithEvaluationConfig = z.infer<typeof arithEvaluationConfigSchema>;
