/**
 * The context length a server says its model has, so a client can keep prompt + new tokens
 * within it (SGLang and vLLM refuse a request past it with 400, and so does our engine): the
 * `max_model_len` of its OpenAI-compatible `GET /v1/models` (SGLang's and vLLM's ModelCard, and
 * our engine's). Null when the server does not say (an OpenAI text API, an older server) or
 * does not answer within `timeoutMs`: the caller's own budget then stands.
 */
import { z } from 'zod';

const modelListSchema = z.object({
  data: z.array(z.object({ max_model_len: z.number().int().positive().nullish() }).passthrough()).min(1),
});

export type ServedContextLengthOptions = {
  url: string;
  /** Sent as a bearer token when given. */
  apiKey?: string;
  timeoutMs?: number;
};

export async function servedContextLength({
  url,
  apiKey,
  timeoutMs = 5_000,
}: ServedContextLengthOptions): Promise<number | null> {
  try {
    const response = await fetch(`${url.replace(/\/+$/, '')}/v1/models`, {
      signal: AbortSignal.timeout(timeoutMs),
      ...(apiKey === undefined ? {} : { headers: { Authorization: `Bearer ${apiKey}` } }),
    });
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    const parsed = modelListSchema.safeParse(await response.json());
    return parsed.success ? (parsed.data.data[0]?.max_model_len ?? null) : null;
  } catch {
    return null; // unreachable or slow: the request itself will say so
  }
}
