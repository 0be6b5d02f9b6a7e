/**
 * One `/generate` call that must produce exactly `maxNewTokens` tokens (EOS ignored, seeded
 * sampling): the probe timing measurements of a worker use (the engine bench, the simulator's
 * cost-model calibration). Throws when the worker answers otherwise.
 */
export async function generateExactly(options: {
  url: string;
  inputIds: number[];
  maxNewTokens: number;
  seed: number;
  headers?: Record<string, string>;
}): Promise<void> {
  const { url, inputIds, maxNewTokens, seed } = options;
  const response = await fetch(`${url}/generate`, {
    method: 'POST',
    headers: options.headers ?? { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      input_ids: inputIds,
      sampling_params: {
        max_new_tokens: maxNewTokens,
        temperature: 1.0,
        ignore_eos: true,
        sampling_seed: seed,
      },
    }),
  });
  const body = (await response.json()) as { output_ids?: number[] };
  if (!response.ok || body.output_ids?.length !== maxNewTokens) {
    throw new Error(
      `${url}/generate answered HTTP ${response.status} with ${body.output_ids?.length} tokens`,
    );
  }
}
