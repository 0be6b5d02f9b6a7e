/**
 * `bench trainer --model DIR`, the side-by-side part: our distributed trainer (one process,
 * through its service, as `train sft --model` runs it) against the loop a user would write
 * (`agentmath_train.plain_loop`: transformers + cross-entropy + AdamW, no FSDP), on the same
 * batches packed the same way, with the same threads. Steps alternate (ours, then plain), so
 * the load of a shared machine falls on both sides alike; the ratio is ours ÷ plain at the
 * median. SFT and GRPO, in fp32 and, where the CPU computes bf16 natively, in bf16 (our
 * trainer: FSDP2's bf16 parameters; the plain loop: CPU bf16 autocast). Every step runs at
 * learning rate 0 (AdamW does all its arithmetic, the weights stay put), so every step's loss
 * is over the same weights: the bf16 losses are compared with fp32's, ours with plain's.
 */
import { ascending, percentile } from '../shared/percentile.ts';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import { startTrainerService } from '../train/index.ts';
import { startPythonLineProcess } from './python-line-process.ts';

export type TrainerModelBenchOptions = {
  model: string;
  steps?: number;
  warmupSteps?: number;
  lengths: number[];
  microBatchTokens: number;
  python?: string;
  onProgress?: (message: string) => void;
};

export type SideFigures = { stepMsP50: number; stepMsP99: number; tokensPerSecondP50: number; loss: number };

export type TrainerModelRow = {
  kind: 'sft' | 'grpo';
  dtype: 'float32' | 'bfloat16';
  ours: SideFigures;
  plain: SideFigures;
  /** ours tokens/s ÷ plain tokens/s (medians). */
  ratio: number;
};

export type TrainerModelBenchReport = {
  model: string;
  threads: number;
  batchSequences: number;
  batchTokens: number;
  rows: TrainerModelRow[];
};

type Sequence = { inputIds: number[]; lossMask: number[]; advantage?: number; oldLogprobs?: number[] };

function side(stepMs: number[], losses: number[], tokens: number): SideFigures {
  const sorted = ascending(stepMs);
  const p50 = percentile(sorted, 0.5);
  return {
    stepMsP50: p50,
    stepMsP99: percentile(sorted, 0.99),
    tokensPerSecondP50: tokens / (p50 / 1000),
    loss: losses.at(-1) ?? Number.NaN,
  };
}

export async function runTrainerModelBench(
  options: TrainerModelBenchOptions,
): Promise<TrainerModelBenchReport> {
  const { model, steps = 3, warmupSteps = 1, lengths, microBatchTokens, onProgress = () => {} } = options;
  const random = createSeededRandom('trainer-model-bench');
  const vocabulary = 300; // ids below any real vocabulary
  const batch: Sequence[] = lengths.map((length) => {
    const inputIds = Array.from({ length }, () => Math.floor(random() * vocabulary));
    return { inputIds, lossMask: inputIds.map((_, index) => (index >= length / 4 ? 1 : 0)) };
  });
  const tokens = lengths.reduce((sum, length) => sum + length, 0);
  onProgress('plain loop: loading the model');
  const plain = await startPythonLineProcess({
    module: 'agentmath_train.plain_loop',
    args: ['--model', model, '--micro-batch-tokens', String(microBatchTokens)],
    ...(options.python === undefined ? {} : { python: options.python }),
  });
  const rows: TrainerModelRow[] = [];
  // bf16 only where the CPU computes it natively (elsewhere it is emulated, slower than fp32).
  const dtypes =
    plain.ready.nativeBf16 === true ? (['float32', 'bfloat16'] as const) : (['float32'] as const);
  try {
    for (const dtype of dtypes) {
      onProgress(`${dtype}: starting our trainer`);
      const service = await startTrainerService({
        model,
        processes: 1,
        microBatchTokens,
        computeDtype: dtype,
      });
      try {
        const bf16 = dtype === 'bfloat16';
        const scored = await service.client.score(batch.map((sequence) => sequence.inputIds));
        const grpoBatch = batch.map((sequence, index) => ({
          ...sequence,
          advantage: index % 2 === 0 ? 1 : -1,
          oldLogprobs: scored.tokenLogprobs[index]!,
        }));
        for (const kind of ['sft', 'grpo'] as const) {
          const ours = { ms: [] as number[], losses: [] as number[] };
          const theirs = { ms: [] as number[], losses: [] as number[] };
          for (let step = 0; step < warmupSteps + steps; step++) {
            const result =
              kind === 'sft'
                ? await service.client.sftStep({ sequences: batch, learningRate: 0 })
                : await service.client.grpoStep({ sequences: grpoBatch, learningRate: 0, temperature: 1 });
            const other = await plain.request<{ stepMs: number; loss: number }>({
              command: kind,
              sequences: kind === 'sft' ? batch : grpoBatch,
              learningRate: 0,
              bf16,
            });
            if (step >= warmupSteps) {
              ours.ms.push(result.stepMs);
              ours.losses.push(result.loss);
              theirs.ms.push(other.stepMs);
              theirs.losses.push(other.loss);
            }
            onProgress(
              `${dtype} ${kind} step ${step + 1}/${warmupSteps + steps}: ours ${result.stepMs.toFixed(0)} ms, plain ${other.stepMs.toFixed(0)} ms`,
            );
          }
          const oursFigures = side(ours.ms, ours.losses, tokens);
          const plainFigures = side(theirs.ms, theirs.losses, tokens);
          rows.push({
            kind,
            dtype,
            ours: oursFigures,
            plain: plainFigures,
            ratio: oursFigures.tokensPerSecondP50 / plainFigures.tokensPerSecondP50,
          });
        }
      } finally {
        await service.stop();
      }
    }
  } finally {
    await plain.stop();
  }
  return {
    model,
    threads: Number(plain.ready.threads ?? 0),
    batchSequences: lengths.length,
    batchTokens: tokens,
    rows,
  };
}

/** The table `bench trainer --model` adds. */
export function renderTrainerModelBench(report: TrainerModelBenchReport): string {
  const lines = [
    `our trainer (1 process) vs a plain PyTorch loop on the same packed batch (${report.batchSequences} sequences, ${report.batchTokens} tokens), ${report.threads} threads each, steps alternating, learning rate 0`,
    '',
    'step | dtype    | ours tok/s p50 (p50 / p99 ms) | plain tok/s p50 (p50 / p99 ms) | ours/plain | loss ours / plain',
    '---- | -------- | ----------------------------- | ------------------------------ | ---------- | -----------------',
  ];
  for (const row of report.rows) {
    const figures = (side: SideFigures) =>
      `${side.tokensPerSecondP50.toFixed(1)} (${side.stepMsP50.toFixed(0)} / ${side.stepMsP99.toFixed(0)})`;
    lines.push(
      `${row.kind.padEnd(4)} | ${row.dtype.padEnd(8)} | ${figures(row.ours)} | ${figures(row.plain)} | ${row.ratio.toFixed(2)}x | ` +
        `${row.ours.loss.toFixed(4)} / ${row.plain.loss.toFixed(4)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
