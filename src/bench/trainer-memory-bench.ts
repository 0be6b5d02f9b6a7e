/**
 * `bench trainer --vocab-size V --tokens T`: the trainer's peak memory for one GRPO step of one
 * T-token sequence at vocabulary V (a random-init Qwen3 of tiny hidden size, so the LM head
 * dominates), with the chunked LM head against the full [T × V] logits, each in its own Python
 * process (`python -m agentmath_train probe`) whose peak resident set comes from the OS.
 *
 * The full-logits path needs about 20·V·T bytes; where that cannot fit in half of this
 * machine's available memory it is measured at T/16 and T/8 and its peak at T is extrapolated
 * on the line through those two (peak memory is linear in T for one sequence: every [T × V]
 * buffer is), and the report says so.
 */
import { execFile } from 'node:child_process';
import { freemem } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';

const run = promisify(execFile);

export type ProbeRun = {
  tokens: number;
  logitsChunkTokens: number;
  /** Sequences packed in the row (1 unless asked) and the attention path (the probe's --attention). */
  sequences?: number;
  attention?: string;
  status: string;
  peakMemoryBytes: number;
  baselineMemoryBytes: number;
  stepSeconds: number[];
};

export type ProbeRequest = {
  vocabSize: number;
  hidden: number;
  layers: number;
  tokens: number;
  logitsChunkTokens: number;
  /** Sequences packed end to end in the row of `tokens` (default 1). */
  sequences?: number;
  /** `sdpa` (transformers', a dense mask for a packed row) or `varlen` (ours; the default). */
  attention?: 'sdpa' | 'varlen';
};

export type TrainerMemoryBenchOptions = {
  vocabSize: number;
  tokens: number;
  hidden?: number;
  layers?: number;
  logitsChunkTokens?: number;
  /** Bytes the machine can give (default: the OS's available memory). */
  availableBytes?: number;
  /** Runs one probe process (default: the project's Python). */
  probe?: (request: ProbeRequest) => Promise<ProbeRun>;
  onProgress?: (message: string) => void;
};

export type FullLogitsPeak = {
  tokens: number;
  peakMemoryBytes: number;
  how: 'measured' | 'extrapolated';
  /** The runs behind the figure (one when measured; the two shorter ones when extrapolated). */
  runs: ProbeRun[];
};

export type TrainerMemoryBenchReport = {
  vocabSize: number;
  tokens: number;
  hidden: number;
  layers: number;
  chunked: ProbeRun;
  fullLogits: FullLogitsPeak;
};

/** Bytes per V·T the full-logits path holds at its peak (fp32 logits, their log-softmax, the
 * entropy's temporaries, the backward's gradient): the planning estimate, not a measurement. */
export const FULL_LOGITS_BYTES_PER_ELEMENT = 20;

/** Peak at `tokens` on the line through two measured (tokens, peak) points. */
export function extrapolatePeak(
  first: { tokens: number; peakMemoryBytes: number },
  second: { tokens: number; peakMemoryBytes: number },
  tokens: number,
): number {
  if (first.tokens === second.tokens) throw new Error('two different lengths are needed to extrapolate');
  const slope = (second.peakMemoryBytes - first.peakMemoryBytes) / (second.tokens - first.tokens);
  return Math.round(second.peakMemoryBytes + slope * (tokens - second.tokens));
}

/** Whether the full-logits path can be measured at `tokens` without risking this machine. */
export function fullLogitsFits(vocabSize: number, tokens: number, availableBytes: number): boolean {
  return FULL_LOGITS_BYTES_PER_ELEMENT * vocabSize * tokens <= availableBytes / 2;
}

/** Runs `python -m agentmath_train probe` on CPU and reads its JSON line. */
export async function runProbeProcess(request: ProbeRequest): Promise<ProbeRun> {
  const args = [
    '-m',
    'agentmath_train',
    'probe',
    '--cpu',
    '--kind',
    'grpo',
    '--vocab-size',
    String(request.vocabSize),
    '--hidden',
    String(request.hidden),
    '--layers',
    String(request.layers),
    '--tokens',
    String(request.tokens),
    '--logits-chunk-tokens',
    String(request.logitsChunkTokens),
    '--sequences',
    String(request.sequences ?? 1),
    '--attention',
    request.attention ?? 'varlen',
  ];
  const { stdout } = await run(trainerPython(), args, {
    env: {
      ...process.env,
      PYTHONPATH: join(PROJECT_ROOT, 'python'),
      HF_HUB_OFFLINE: '1',
      TRANSFORMERS_VERBOSITY: 'error',
    },
    maxBuffer: 1 << 20,
  });
  const line = stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(line) as ProbeRun;
}

export async function runTrainerMemoryBench(
  options: TrainerMemoryBenchOptions,
): Promise<TrainerMemoryBenchReport> {
  const {
    vocabSize,
    tokens,
    hidden = 64,
    layers = 2,
    logitsChunkTokens = 512,
    availableBytes = freemem(),
    probe = runProbeProcess,
    onProgress = () => {},
  } = options;
  const request = { vocabSize, hidden, layers };
  onProgress(`chunked LM head (${logitsChunkTokens} tokens a chunk): one GRPO step of ${tokens} tokens`);
  const chunked = await probe({ ...request, tokens, logitsChunkTokens });
  let fullLogits: FullLogitsPeak;
  if (fullLogitsFits(vocabSize, tokens, availableBytes)) {
    onProgress(`full logits: one GRPO step of ${tokens} tokens`);
    const measured = await probe({ ...request, tokens, logitsChunkTokens: 0 });
    fullLogits = { tokens, peakMemoryBytes: measured.peakMemoryBytes, how: 'measured', runs: [measured] };
  } else {
    const lengths = [Math.max(2, Math.floor(tokens / 16)), Math.max(3, Math.floor(tokens / 8))];
    onProgress(
      `full logits at ${tokens} tokens would need ~${gib(FULL_LOGITS_BYTES_PER_ELEMENT * vocabSize * tokens)} GiB ` +
        `(available ${gib(availableBytes)} GiB): measuring at ${lengths.join(' and ')} tokens`,
    );
    const runs: ProbeRun[] = [];
    for (const length of lengths)
      runs.push(await probe({ ...request, tokens: length, logitsChunkTokens: 0 }));
    fullLogits = {
      tokens,
      peakMemoryBytes: extrapolatePeak(runs[0]!, runs[1]!, tokens),
      how: 'extrapolated',
      runs,
    };
  }
  return { vocabSize, tokens, hidden, layers, chunked, fullLogits };
}

function gib(bytes: number): string {
  return (bytes / 2 ** 30).toFixed(2);
}

/** The report as `bench trainer --tokens` prints it: both paths side by side. */
export function renderTrainerMemoryBench(report: TrainerMemoryBenchReport): string {
  const { chunked, fullLogits } = report;
  const lines = [
    `one GRPO step of one ${report.tokens}-token sequence, V = ${report.vocabSize}, hidden ${report.hidden}, ${report.layers} layers (CPU, fp32; peak resident set from the OS, each path in its own process)`,
    '',
    'LM head path                | peak RSS (GiB) | before the step (GiB) | step (s) | how',
    '--------------------------- | -------------- | --------------------- | -------- | ---',
    `chunked (${chunked.logitsChunkTokens} tokens a chunk)`.padEnd(27) +
      ` | ${gib(chunked.peakMemoryBytes)} | ${gib(chunked.baselineMemoryBytes)} | ${seconds(chunked)} | measured (${chunked.status})`,
  ];
  if (fullLogits.how === 'measured') {
    const measured = fullLogits.runs[0]!;
    lines.push(
      `full [T × V] logits`.padEnd(27) +
        ` | ${gib(measured.peakMemoryBytes)} | ${gib(measured.baselineMemoryBytes)} | ${seconds(measured)} | measured (${measured.status})`,
    );
  } else {
    lines.push(
      `full [T × V] logits`.padEnd(27) +
        ` | ${gib(fullLogits.peakMemoryBytes)} | — | — | extrapolated from ${fullLogits.runs.map((run) => `${run.tokens} tokens: ${gib(run.peakMemoryBytes)} GiB`).join(', ')}`,
    );
  }
  lines.push(
    '',
    `full logits ÷ chunked at ${report.tokens} tokens: ${(fullLogits.peakMemoryBytes / chunked.peakMemoryBytes).toFixed(1)}x`,
  );
  return `${lines.join('\n')}\n`;
}

function seconds(run: ProbeRun): string {
  return run.stepSeconds.length ? (run.stepSeconds[0] ?? 0).toFixed(1) : '—';
}
