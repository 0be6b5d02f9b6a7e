/**
 * `bench engine` figures for a running engine: generation tokens/s at several batch sizes
 * (B concurrent `/generate` requests of `newTokens` tokens each, EOS ignored so every
 * request runs its full length). The baseline, measured in the same run, is batch 1: the
 * ratio says what continuous batching buys. (Training speed is `bench trainer`'s.)
 */

import { generateExactly } from '../engine/local/generate-exactly.ts';
import { ascending, percentile } from '../shared/percentile.ts';

export type EngineBenchOptions = {
  url: string;
  /** The worker's API key, sent as a bearer token. */
  apiKey?: string;
  batchSizes?: number[];
  promptTokens?: number;
  newTokens?: number;
  rounds?: number;
  onProgress?: (message: string) => void;
};

export type GenerationFigures = {
  batchSize: number;
  tokensPerSecondP50: number;
  tokensPerSecondMin: number;
  requestSecondsP50: number;
  requestSecondsP99: number;
  /** tokens/s at this batch size ÷ tokens/s at batch 1. */
  ratioToBatch1: number | null;
};

export type EngineBenchReport = {
  url: string;
  promptTokens: number;
  newTokens: number;
  rounds: number;
  generation: GenerationFigures[];
};

/** Runs the benchmark against the engine at `url`. */
export async function benchEngine(options: EngineBenchOptions): Promise<EngineBenchReport> {
  const {
    url,
    batchSizes = [1, 16, 64],
    promptTokens = 100,
    newTokens = 256,
    rounds = 3,
    onProgress = () => {},
  } = options;
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    ...(options.apiKey === undefined ? {} : { Authorization: `Bearer ${options.apiKey}` }),
  };
  const prompt = Array.from({ length: promptTokens }, (_, index) => 48 + (index % 10));
  await generate(url, headers, prompt, 8, 0); // warm-up
  const measured: Omit<GenerationFigures, 'ratioToBatch1'>[] = [];
  for (const batchSize of batchSizes) {
    const rates: number[] = [];
    const latencies: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const started = performance.now();
      const seconds = await Promise.all(
        Array.from({ length: batchSize }, async (_, index) => {
          const requestStart = performance.now();
          await generate(url, headers, prompt, newTokens, round * 1000 + index);
          return (performance.now() - requestStart) / 1000;
        }),
      );
      rates.push((batchSize * newTokens) / ((performance.now() - started) / 1000));
      latencies.push(...seconds);
    }
    onProgress(`batch ${batchSize}: ${percentileOf(rates, 50).toFixed(0)} tokens/s`);
    measured.push({
      batchSize,
      tokensPerSecondP50: percentileOf(rates, 50),
      tokensPerSecondMin: Math.min(...rates),
      requestSecondsP50: percentileOf(latencies, 50),
      requestSecondsP99: percentileOf(latencies, 99),
    });
  }
  const baseline = measured.find((figures) => figures.batchSize === 1)?.tokensPerSecondP50 ?? null;
  const generation = measured.map((figures) => ({
    ...figures,
    ratioToBatch1: baseline ? figures.tokensPerSecondP50 / baseline : null,
  }));
  return { url, promptTokens, newTokens, rounds, generation };
}

function generate(
  url: string,
  headers: Record<string, string>,
  inputIds: number[],
  maxNewTokens: number,
  seed: number,
): Promise<void> {
  return generateExactly({ url, headers, inputIds, maxNewTokens, seed });
}

/** Nearest-rank percentile `p` (0–100) of unsorted values. */
function percentileOf(values: number[], p: number): number {
  return percentile(ascending(values), p / 100);
}
