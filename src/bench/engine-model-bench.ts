/**
 * `bench engine --model DIR`: the embedded engine serving a Hugging Face model against what a
 * user would run instead, side by side in one run. For each concurrency B (default 1, 8, 32)
 * and each round, in turn: B concurrent greedy `/generate` requests to the engine (EOS ignored,
 * exactly `newTokens` each), then plain `transformers` `generate` on the same B prompts as one
 * batch, in a process with the engine's decode threads and dtype. Both give tokens/s per round
 * (median, and the rate of the slowest round as p99). The bound is a memory-bandwidth bound:
 * a decode step reads every weight once, so B × (copy bandwidth ÷ weight bytes) tokens/s, with
 * the bandwidth measured in the same run. The matmul floor: every linear layer of the model run
 * once on B rows, with the engine's kind of weights (packed or plain), timed in the baseline's
 * process: what a decode step costs before attention, the KV cache and the rest; B ÷ that time
 * is the most an engine computing those matmuls with this library reaches. Greedy agreement: the engine's tokens for the first
 * prompt against `generate`'s, same dtype (the count of equal leading tokens).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { countNoun } from '../shared/count-noun.ts';
import { ascending, percentile } from '../shared/percentile.ts';
import { type DecodeProfile, renderDecodeProfile, runDecodeProfile } from './decode-profile.ts';
import { startPythonLineProcess } from './python-line-process.ts';

export type EngineModelBenchOptions = {
  url: string;
  headers: Record<string, string>;
  model: string;
  concurrency?: number[];
  promptTokens?: number;
  newTokens?: number;
  rounds?: number;
  /** Also profile the engine's decode step at each concurrency (`decode-profile.ts`). */
  profile?: boolean;
  python?: string;
  onProgress?: (message: string) => void;
};

/** Where the bench ran: what decides which kernels run (`cpu_features.describe_machine`). */
export type MachineDescription = {
  cpuModel: string;
  cores: number;
  /** The CPU flags that select matmul kernels (AVX-512, VNNI, BF16, AMX …) this CPU has. */
  kernelFlags: string[];
  torchCpuCapability: string;
  /** oneDNN's own description of the ISA it uses. */
  onednnIsa: string | null;
  /** Decode dtype → the kernel oneDNN runs a packed linear layer with. */
  onednnLinear: Record<string, string>;
  amxInUse: boolean;
  threads: number;
  ompWaitPolicy: string | null;
};

export type RateFigures = { tokensPerSecondP50: number; tokensPerSecondP99: number };

export type EngineModelRow = {
  concurrency: number;
  engine: RateFigures;
  transformers: RateFigures;
  /** B × copy bandwidth ÷ weight bytes. */
  boundTokensPerSecond: number;
  /** engine p50 ÷ transformers p50. */
  ratioToTransformers: number;
  /** engine p50 ÷ the bound. */
  shareOfBound: number;
  /** B ÷ the time of the model's linear layers once on B rows (the matmul floor). */
  matmulTokensPerSecond: number;
  /** engine p50 ÷ the matmul floor. */
  shareOfMatmuls: number;
};

export type EngineModelBenchReport = {
  model: string;
  machine: MachineDescription;
  decodeDtype: string;
  /** The engine's linear weights for generation: `packed` (oneDNN's layout) or `plain`. */
  decodeLinear: string;
  decodeThreads: number;
  promptTokens: number;
  newTokens: number;
  rounds: number;
  copyBytesPerSecond: number;
  weightBytes: number;
  /** Leading tokens of the first prompt where the engine's greedy tokens equal transformers'. */
  greedyAgreement: { equalLeadingTokens: number; of: number };
  /**
   * |engine logprob − transformers' logprob| of the engine's greedy tokens for the first prompt,
   * transformers scoring them in one forward pass in the same dtype (as a trainer scores a
   * rollout): mean and max.
   */
  logprobGap: LogprobGap;
  /**
   * With a decode dtype other than float32: the same gap to transformers scoring in float32, the
   * trainer's dtype (what RL's `rolloutLogprobGap` sees).
   */
  logprobGapToFloat32?: LogprobGap;
  /** With `--decode-dtype auto`: what the engine timed at start and chose. */
  decodeDtypeChoice?: DecodeDtypeChoice;
  rows: EngineModelRow[];
  /** With `profile`: where a decode step goes, per concurrency. */
  profile?: DecodeProfile[];
};

type DecodeDtypeChoice = { chosen: string; rule: string; seconds_per_token: Record<string, number> };
type ModelInfo = {
  decode_threads?: number;
  model?: { decode_dtype?: string; decode_linear?: string; decode_dtype_choice?: DecodeDtypeChoice };
};
type LogprobGap = { mean: number; max: number; of: number };

/** Distinct prompts of equal length (no padding on either side), ids in [0, vocabulary). */
export function benchPrompts(count: number, length: number, vocabulary: number): number[][] {
  return Array.from({ length: count }, (_, row) =>
    Array.from({ length }, (_, index) => (row * 7919 + index * 104_729 + 1) % vocabulary),
  );
}

function rates(values: number[]): RateFigures {
  const sorted = ascending(values);
  // The p99 round is the slowest: the rate at the 1st percentile of the rates.
  return { tokensPerSecondP50: percentile(sorted, 0.5), tokensPerSecondP99: percentile(sorted, 0.01) };
}

async function greedyRequest(
  url: string,
  headers: Record<string, string>,
  inputIds: number[],
  maxNewTokens: number,
): Promise<number[]> {
  return (await greedyWithLogprobs(url, headers, inputIds, maxNewTokens, false)).outputIds;
}

/** One greedy `/generate` of exactly `maxNewTokens` (EOS ignored); `cachedTokens`: the engine's `meta_info.cached_tokens` (0 if absent). */
export async function greedyWithLogprobs(
  url: string,
  headers: Record<string, string>,
  inputIds: number[],
  maxNewTokens: number,
  returnLogprob: boolean,
): Promise<{ outputIds: number[]; logprobs: number[]; cachedTokens: number }> {
  const response = await fetch(`${url}/generate`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      input_ids: inputIds,
      sampling_params: { max_new_tokens: maxNewTokens, temperature: 0, ignore_eos: true },
      ...(returnLogprob ? { return_logprob: true } : {}),
    }),
  });
  const body = (await response.json()) as {
    output_ids?: number[];
    meta_info?: { output_token_logprobs?: [number, number, ...unknown[]][]; cached_tokens?: number };
  };
  if (!response.ok || body.output_ids?.length !== maxNewTokens) {
    throw new Error(
      `${url}/generate answered HTTP ${response.status} with ${body.output_ids?.length} tokens`,
    );
  }
  const logprobs = (body.meta_info?.output_token_logprobs ?? []).map((entry) => entry[0]);
  if (returnLogprob && logprobs.length !== maxNewTokens) {
    throw new Error(`${url}/generate returned ${logprobs.length} logprobs for ${maxNewTokens} tokens`);
  }
  return { outputIds: body.output_ids, logprobs, cachedTokens: body.meta_info?.cached_tokens ?? 0 };
}

export async function runEngineModelBench(options: EngineModelBenchOptions): Promise<EngineModelBenchReport> {
  const {
    url,
    headers,
    model,
    concurrency = [1, 8, 32],
    promptTokens = 64,
    newTokens = 64,
    rounds = 3,
    onProgress = () => {},
  } = options;
  const info = (await (await fetch(`${url}/get_model_info`, { headers })).json()) as ModelInfo;
  const decodeDtype = info.model?.decode_dtype ?? 'float32';
  const decodeLinear = info.model?.decode_linear ?? 'plain';
  const decodeThreads = info.decode_threads ?? 0;
  onProgress(`transformers generate: loading ${model} (${decodeDtype}, ${decodeThreads || 'all'} threads)`);
  const baseline = await startPythonLineProcess({
    module: 'agentmath_engine.generate_baseline',
    args: ['--model', model, '--threads', String(decodeThreads), '--dtype', decodeDtype],
    ...(options.python === undefined ? {} : { python: options.python }),
  });
  try {
    const machine = await baseline.request<MachineDescription>({ command: 'machine' });
    const bound = await baseline.request<{ copyBytesPerSecond: number; weightBytes: number }>({
      command: 'bound',
      kind: decodeLinear,
    });
    const config = JSON.parse(await readFile(join(model, 'config.json'), 'utf8')) as { vocab_size?: number };
    const prompts = benchPrompts(Math.max(...concurrency), promptTokens, config.vocab_size ?? 256);
    const first = prompts.slice(0, 1);
    await greedyRequest(url, headers, first[0]!, 4); // warm-up, both sides
    await baseline.request({ command: 'generate', prompts: first, maxNewTokens: 4 });
    const rows: EngineModelRow[] = [];
    let greedyAgreement = { equalLeadingTokens: 0, of: 0 };
    for (const count of concurrency) {
      const batch = prompts.slice(0, count);
      const engineRates: number[] = [];
      const baselineRates: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const started = performance.now();
        const outputs = await Promise.all(
          batch.map((prompt) => greedyRequest(url, headers, prompt, newTokens)),
        );
        engineRates.push((count * newTokens) / ((performance.now() - started) / 1000));
        const reference = await baseline.request<{ seconds: number; outputIds: number[][] }>({
          command: 'generate',
          prompts: batch,
          maxNewTokens: newTokens,
        });
        baselineRates.push((count * newTokens) / reference.seconds);
        if (greedyAgreement.of === 0) {
          const mine = outputs[0]!;
          const theirs = reference.outputIds[0]!;
          let equal = 0;
          while (equal < mine.length && mine[equal] === theirs[equal]) equal++;
          greedyAgreement = { equalLeadingTokens: equal, of: mine.length };
        }
        onProgress(
          `${count} concurrent, round ${round + 1}/${rounds}: engine ${engineRates.at(-1)!.toFixed(1)} tok/s, transformers ${baselineRates.at(-1)!.toFixed(1)} tok/s`,
        );
      }
      const engine = rates(engineRates);
      const transformers = rates(baselineRates);
      const boundTokensPerSecond = (count * bound.copyBytesPerSecond) / bound.weightBytes;
      const floor = await baseline.request<{ seconds: number }>({
        command: 'matmuls',
        rows: count,
        kind: decodeLinear,
      });
      const matmulTokensPerSecond = count / floor.seconds;
      rows.push({
        concurrency: count,
        engine,
        transformers,
        boundTokensPerSecond,
        ratioToTransformers: engine.tokensPerSecondP50 / transformers.tokensPerSecondP50,
        shareOfBound: engine.tokensPerSecondP50 / boundTokensPerSecond,
        matmulTokensPerSecond,
        shareOfMatmuls: engine.tokensPerSecondP50 / matmulTokensPerSecond,
      });
    }
    // The engine's logprobs against transformers' scoring of the same tokens.
    const sampled = await greedyWithLogprobs(url, headers, prompts[0]!, newTokens, true);
    const scored = await baseline.request<{ logprobs: number[] }>({
      command: 'score',
      prompt: prompts[0]!,
      output: sampled.outputIds,
    });
    const logprobGap = gapBetween(sampled.logprobs, scored.logprobs);
    const logprobGapToFloat32 =
      decodeDtype === 'float32'
        ? undefined
        : gapBetween(
            sampled.logprobs,
            (
              await baseline.request<{ logprobs: number[] }>({
                command: 'score',
                prompt: prompts[0]!,
                output: sampled.outputIds,
                dtype: 'float32',
              })
            ).logprobs,
          );
    const profile = options.profile
      ? await runDecodeProfile({
          model,
          decodeDtype,
          decodeLinear,
          threads: decodeThreads,
          prompts,
          concurrency,
          ...(options.python === undefined ? {} : { python: options.python }),
        })
      : undefined;
    return {
      model,
      machine,
      decodeDtype,
      decodeLinear,
      decodeThreads,
      promptTokens,
      newTokens,
      rounds,
      copyBytesPerSecond: bound.copyBytesPerSecond,
      weightBytes: bound.weightBytes,
      greedyAgreement,
      logprobGap,
      ...(logprobGapToFloat32 === undefined ? {} : { logprobGapToFloat32 }),
      ...(info.model?.decode_dtype_choice === undefined
        ? {}
        : { decodeDtypeChoice: info.model.decode_dtype_choice }),
      rows,
      ...(profile === undefined ? {} : { profile }),
    };
  } finally {
    await baseline.stop();
  }
}

function gapBetween(mine: number[], theirs: number[]): LogprobGap {
  const gaps = mine.map((value, index) => Math.abs(value - theirs[index]!));
  return {
    mean: gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length,
    max: Math.max(...gaps),
    of: gaps.length,
  };
}

/** One line: the CPU, the kernels it gets, threads. */
export function describeMachine(machine: MachineDescription): string {
  const kernels = Object.entries(machine.onednnLinear)
    .map(([dtype, kernel]) => `${dtype} ${kernel}`)
    .join(', ');
  return (
    `ran on: ${machine.cpuModel}, ${machine.cores} cores (${machine.kernelFlags.join(' ') || 'no AVX'}); ` +
    `torch CPU capability ${machine.torchCpuCapability}; oneDNN ${machine.onednnIsa ?? 'not available'}` +
    `${kernels ? `, packed linear: ${kernels}` : ''} (AMX ${machine.amxInUse ? 'in use' : 'not in use'}); ` +
    `${machine.threads} threads, OMP_WAIT_POLICY=${machine.ompWaitPolicy ?? 'unset'}`
  );
}

/** The table `bench engine --model` prints. */
export function renderEngineModelBench(report: EngineModelBenchReport): string {
  const lines = [
    describeMachine(report.machine),
    `model ${report.model}: decode ${report.decodeDtype} (${report.decodeLinear} linear weights), ${report.decodeThreads || 'all'} threads; prompt ${report.promptTokens} tokens, ${report.newTokens} new tokens per request (greedy, EOS ignored), ${countNoun(report.rounds, 'round')}`,
    `bound: copy bandwidth ${(report.copyBytesPerSecond / 1e9).toFixed(1)} GB/s, ${(report.weightBytes / 1e6).toFixed(0)} MB of weights read per decode step`,
    '',
    'concurrent | engine tok/s p50 (p99) | transformers tok/s p50 (p99) | engine/transformers | bound tok/s | engine/bound | matmuls alone tok/s | engine/matmuls',
    '---------- | ---------------------- | ---------------------------- | ------------------- | ----------- | ------------ | ------------------- | --------------',
  ];
  for (const row of report.rows) {
    lines.push(
      `${String(row.concurrency).padEnd(10)} | ${row.engine.tokensPerSecondP50.toFixed(1)} (${row.engine.tokensPerSecondP99.toFixed(1)}) | ` +
        `${row.transformers.tokensPerSecondP50.toFixed(1)} (${row.transformers.tokensPerSecondP99.toFixed(1)}) | ` +
        `${row.ratioToTransformers.toFixed(2)}x | ${row.boundTokensPerSecond.toFixed(0)} | ${(100 * row.shareOfBound).toFixed(0)}% | ` +
        `${row.matmulTokensPerSecond.toFixed(0)} | ${(100 * row.shareOfMatmuls).toFixed(0)}%`,
    );
  }
  const agreement = report.greedyAgreement;
  lines.push(
    '',
    `greedy tokens equal to transformers' for ${agreement.equalLeadingTokens} of ${agreement.of} (first prompt, ${report.decodeDtype} on both sides)`,
    `logprob gap to transformers scoring the same ${report.logprobGap.of} tokens in one forward pass: mean ${report.logprobGap.mean.toExponential(1)}, max ${report.logprobGap.max.toExponential(1)}`,
  );
  const toFloat32 = report.logprobGapToFloat32;
  if (toFloat32 !== undefined) {
    lines.push(
      `logprob gap to transformers scoring them in float32 (the trainer's dtype, what RL's rolloutLogprobGap sees): mean ${toFloat32.mean.toExponential(1)}, max ${toFloat32.max.toExponential(1)}`,
    );
  }
  const choice = report.decodeDtypeChoice;
  if (choice !== undefined) {
    const timings = Object.entries(choice.seconds_per_token)
      .map(([dtype, seconds]) => `${dtype} ${(1000 * seconds).toFixed(2)} ms`)
      .join(', ');
    lines.push(`decode dtype auto: ${choice.chosen} (${choice.rule}; per token, one thread: ${timings})`);
  }
  const profile = report.profile === undefined ? '' : `\n${renderDecodeProfile(report.profile)}`;
  return `${lines.join('\n')}\n${profile}`;
}
