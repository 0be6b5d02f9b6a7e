/**
 * Measures a real engine over SGLang's `/generate` to fit the cost model: prefill (one token
 * generated after prompts of several lengths, one request at a time) and decode (a batch of
 * equal requests generating a fixed number of tokens, EOS ignored; the time per iteration is
 * what is left after the prefill line, over the tokens). Every request is seeded.
 */
import { generateExactly } from '../engine/local/generate-exactly.ts';
import { type CostModelFit, type DecodePoint, fitCostModel, type PrefillPoint } from './cost-model-fit.ts';

export type EngineCalibrationOptions = {
  url: string;
  /** Prompt lengths for the prefill line (default 64, 192, 384, 576). */
  prefillPromptTokens?: number[];
  /** Batch sizes for decode (default 1, 4, 16, 48). */
  batchSizes?: number[];
  /** Prompt lengths for decode (default 32, 320). */
  decodePromptTokens?: number[];
  /** Tokens each decode request generates (default 128). */
  newTokens?: number;
  /** Repetitions of every measurement; the median is kept (default 3). */
  rounds?: number;
  onProgress?: (line: string) => void;
};

export type EngineCalibration = CostModelFit & { decode: DecodePoint[]; prefill: PrefillPoint[] };

export async function calibrateEngine(options: EngineCalibrationOptions): Promise<EngineCalibration> {
  const {
    url,
    prefillPromptTokens = [64, 192, 384, 576],
    batchSizes = [1, 4, 16, 48],
    decodePromptTokens = [32, 320],
    newTokens = 128,
    rounds = 3,
    onProgress = () => {},
  } = options;
  const prompt = (length: number, salt: number) =>
    Array.from({ length }, (_, index) => 97 + ((index * 7 + salt) % 26));
  let seed = 1;
  await generate(url, prompt(32, 0), 4, seed++); // warm-up
  const prefill: PrefillPoint[] = [];
  for (const promptTokens of prefillPromptTokens) {
    const times: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const started = performance.now();
      await generate(url, prompt(promptTokens, round), 1, seed++);
      times.push(performance.now() - started);
    }
    prefill.push({ promptTokens, ms: median(times) });
    onProgress(`prefill ${promptTokens} tokens: ${median(times).toFixed(1)} ms`);
  }
  const line = fitCostModel([{ batch: 1, contextTokens: 1, iterationMs: 1 }], prefill);
  const decode: DecodePoint[] = [];
  for (const promptTokens of decodePromptTokens) {
    for (const batch of batchSizes) {
      const times: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const started = performance.now();
        await Promise.all(
          Array.from({ length: batch }, (_, index) =>
            generate(url, prompt(promptTokens, index), newTokens, seed++),
          ),
        );
        times.push(performance.now() - started);
      }
      const prefillMs = line.prefillInterceptMs + line.costModel.prefillPerTokenMs * promptTokens * batch;
      const iterationMs = Math.max(0, median(times) - prefillMs) / newTokens;
      const contextTokens = batch * (promptTokens + newTokens / 2);
      decode.push({ batch, contextTokens, iterationMs });
      onProgress(`decode batch ${batch}, prompt ${promptTokens}: ${iterationMs.toFixed(2)} ms per iteration`);
    }
  }
  return { ...fitCostModel(decode, prefill), decode, prefill };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

function generate(url: string, inputIds: number[], maxNewTokens: number, seed: number): Promise<void> {
  return generateExactly({ url, inputIds, maxNewTokens, seed });
}
