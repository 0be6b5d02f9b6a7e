/**
 * The sampling that `eval` and `solve` use unless told otherwise: temperature 0.6, top-p 0.95,
 * the setting most math-reasoning evaluations report avg@k and pass@k at (DeepSeek-R1's
 * recommended decoding). The agent's own schema defaults to temperature 1 and top-p 1 — the
 * policy's unmodified distribution, which RL rollouts need — so evaluation states its own.
 */
import { z } from 'zod';
import { samplingSchema } from '../agent/index.ts';

export const evalSamplingSchema = samplingSchema
  .extend({
    temperature: z.number().nonnegative().default(0.6),
    topP: z.number().gt(0).lte(1).default(0.95),
  })
  .strict();
