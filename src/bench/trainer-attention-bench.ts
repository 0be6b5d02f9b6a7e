/**
 * `bench trainer --tokens T --packed-sequences N`: the trainer's peak memory and step time for
 * one GRPO step over one packed row of T tokens holding N sequences, with transformers' `sdpa`
 * (which derives a dense [T × T] block-diagonal mask from the position ids) against our
 * variable-length attention (`agentmath_varlen`: attention within each sequence, no mask),
 * each in its own Python process (`python -m agentmath_train probe`) whose peak resident set
 * comes from the OS. The model is a random-init Qwen3 of tiny hidden size and vocabulary, so
 * attention's memory is what differs.
 *
 * The dense path is run only where its estimated peak (DENSE_BYTES_PER_PAIR per query–key
 * pair) fits in half of this machine's available memory; otherwise the report gives the
 * estimate and says it was not run.
 */
import { freemem } from 'node:os';
import { type ProbeRequest, type ProbeRun, runProbeProcess } from './trainer-memory-bench.ts';

export type AttentionPath = 'sdpa' | 'varlen';

export type TrainerAttentionBenchOptions = {
  tokens: number;
  sequences: number;
  vocabSize?: number;
  hidden?: number;
  layers?: number;
  logitsChunkTokens?: number;
  /** Bytes the machine can give (default: the OS's available memory). */
  availableBytes?: number;
  /** Runs one probe process (default: the project's Python). */
  probe?: (request: ProbeRequest) => Promise<ProbeRun>;
  onProgress?: (message: string) => void;
};

export type AttentionPathResult =
  | { attention: AttentionPath; how: 'measured'; run: ProbeRun }
  | { attention: AttentionPath; how: 'not-run'; estimatedPeakBytes: number };

export type TrainerAttentionBenchReport = {
  tokens: number;
  sequences: number;
  vocabSize: number;
  hidden: number;
  layers: number;
  logitsChunkTokens: number;
  paths: AttentionPathResult[];
};

/** Bytes per query–key pair the sdpa path adds to the process at its peak on CPU (the boolean
 * mask, what the kernel and its backward derive from it): a planning figure, 10.1 measured at
 * T = 16,384 (8 sequences, hidden 64, 2 layers). */
export const DENSE_BYTES_PER_PAIR = 12;

export async function runTrainerAttentionBench(
  options: TrainerAttentionBenchOptions,
): Promise<TrainerAttentionBenchReport> {
  const {
    tokens,
    sequences,
    vocabSize = 1024,
    hidden = 64,
    layers = 2,
    logitsChunkTokens = 512,
    availableBytes = freemem(),
    probe = runProbeProcess,
    onProgress = () => {},
  } = options;
  if (tokens < 2 * sequences)
    throw new RangeError(`${tokens} tokens cannot hold ${sequences} sequences of at least 2 tokens`);
  const request = { vocabSize, hidden, layers, tokens, sequences, logitsChunkTokens };
  const paths: AttentionPathResult[] = [];
  onProgress(`varlen attention: one GRPO step of ${sequences} sequences packed in ${tokens} tokens`);
  paths.push({ attention: 'varlen', how: 'measured', run: await probe({ ...request, attention: 'varlen' }) });
  const estimatedPeakBytes = DENSE_BYTES_PER_PAIR * tokens * tokens;
  if (estimatedPeakBytes <= availableBytes / 2) {
    onProgress(`sdpa with its dense mask: the same step`);
    paths.push({ attention: 'sdpa', how: 'measured', run: await probe({ ...request, attention: 'sdpa' }) });
  } else {
    onProgress(
      `sdpa not run: its dense mask path needs ~${gib(estimatedPeakBytes)} GiB (available ${gib(availableBytes)} GiB)`,
    );
    paths.push({ attention: 'sdpa', how: 'not-run', estimatedPeakBytes });
  }
  return { tokens, sequences, vocabSize, hidden, layers, logitsChunkTokens, paths };
}

function gib(bytes: number): string {
  return (bytes / 2 ** 30).toFixed(2);
}

const LABELS: Record<AttentionPath, string> = {
  varlen: 'varlen (no mask)',
  sdpa: 'sdpa, dense [T × T] mask',
};

/** The report as `bench trainer --packed-sequences` prints it: both paths side by side. */
export function renderTrainerAttentionBench(report: TrainerAttentionBenchReport): string {
  const lines = [
    `one GRPO step of ${report.sequences} sequences packed in one ${report.tokens}-token row, V = ${report.vocabSize}, hidden ${report.hidden}, ${report.layers} layers, LM head in chunks of ${report.logitsChunkTokens} (CPU, fp32; peak resident set from the OS, each path in its own process)`,
    '',
    'attention                | peak RSS (GiB) | above the start (GiB) | step (s) | how',
    '------------------------ | -------------- | --------------------- | -------- | ---',
  ];
  for (const path of report.paths) {
    const label = LABELS[path.attention].padEnd(24);
    if (path.how === 'measured') {
      const { run } = path;
      lines.push(
        `${label} | ${gib(run.peakMemoryBytes)} | ${gib(run.peakMemoryBytes - run.baselineMemoryBytes)} | ${seconds(run)} | measured (${run.status})`,
      );
    } else {
      lines.push(
        `${label} | — | ~${gib(path.estimatedPeakBytes)} | — | not run: estimated, more than half the available memory`,
      );
    }
  }
  const [varlen, sdpa] = report.paths;
  if (varlen?.how === 'measured' && sdpa?.how === 'measured') {
    const above = (run: ProbeRun) => run.peakMemoryBytes - run.baselineMemoryBytes;
    lines.push(
      '',
      `sdpa ÷ varlen above the start: ${(above(sdpa.run) / above(varlen.run)).toFixed(1)}x memory, ${(median(sdpa.run) / median(varlen.run)).toFixed(1)}x time`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function median(run: ProbeRun): number {
  const sorted = [...run.stepSeconds].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function seconds(run: ProbeRun): string {
  return run.stepSeconds.length ? median(run).toFixed(1) : '—';
}
