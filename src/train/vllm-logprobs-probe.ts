/**
 * Whether a vLLM server returns logprobs after temperature, as GRPO's importance weight needs.
 * vLLM 0.33.0 returns them before temperature unless started with `--logprobs-mode
 * processed_logprobs` (`vllm/config/model.py` `logprobs_mode`, default "raw_logprobs"; the
 * sampler, `vllm/v1/sample/sampler.py`, computes them from the unscaled logits in that mode):
 * the ratio π_trainer / π_engine then compares a temperature-scaled distribution with an unscaled
 * one, a bias whenever T ≠ 1. (SGLang's are temperature-scaled.)
 *
 * The probe: one token at temperature T and one at 1, each asking for the top-2 logprobs of the
 * first position of the same prompt. Scaled logprobs are log-softmax(logits / T), so the gap
 * between the two best tokens is divided by T; raw ones keep the same gap at any temperature.
 */
import { z } from 'zod';
import { longRequest } from '../shared/long-request.ts';

export type LogprobsMode = 'processed' | 'raw' | 'unknown';

const completionSchema = z.object({
  choices: z
    .array(
      z.object({
        logprobs: z.object({ top_logprobs: z.array(z.record(z.string(), z.number()).nullable()) }).nullish(),
      }),
    )
    .min(1),
});

/** The gap between the two best logprobs of the first position, or null when not given. */
async function firstGap(
  url: string,
  body: Record<string, unknown>,
  headers: Record<string, string>,
): Promise<number | null> {
  const outcome = await longRequest({
    url: `${url.replace(/\/$/, '')}/v1/completions`,
    method: 'POST',
    body: JSON.stringify(body),
    contentType: 'application/json',
    headers,
    timeoutMs: 120_000,
  });
  if (outcome.kind !== 'answer' || outcome.status !== 200) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(outcome.text);
  } catch {
    return null;
  }
  const answer = completionSchema.safeParse(parsed);
  const top = answer.success ? answer.data.choices[0]?.logprobs?.top_logprobs[0] : null;
  const values = top ? Object.values(top).sort((a, b) => b - a) : [];
  return values.length >= 2 ? (values[0] as number) - (values[1] as number) : null;
}

/** What the server at `url` returns at `temperature` (≠ 1), from two one-token requests. */
export async function vllmLogprobsMode({
  url,
  promptTokenIds,
  temperature,
  apiKey,
  model,
}: {
  url: string;
  promptTokenIds: number[];
  temperature: number;
  apiKey?: string;
  model?: string;
}): Promise<LogprobsMode> {
  const headers: Record<string, string> = apiKey === undefined ? {} : { Authorization: `Bearer ${apiKey}` };
  const request = (at: number) => ({
    prompt: promptTokenIds,
    max_tokens: 1,
    temperature: at,
    top_p: 1,
    logprobs: 2,
    seed: 0,
    ...(model === undefined ? {} : { model }),
  });
  const [scaled, plain] = await Promise.all([
    firstGap(url, request(temperature), headers),
    firstGap(url, request(1), headers),
  ]);
  if (scaled === null || plain === null || plain < 1e-4) return 'unknown';
  const ratio = scaled / plain;
  return Math.abs(ratio - 1 / temperature) < Math.abs(ratio - 1) ? 'processed' : 'raw';
}
