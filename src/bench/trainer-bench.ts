/**
 * `bench trainer`: the distributed trainer's figures on this machine. For 1 and then P
 * processes (the baseline is 1, in the same run): SFT and GRPO step tokens/s over the same
 * global batch (median and p99 of the steps after warmup) and the peak memory per parameter;
 * the share of real tokens in packed micro-batches against padding each micro-batch to its
 * longest sequence (the plan, computed for the batch's lengths); and the time to move a step's
 * batch at paper scale (512 × 16k tokens with masks, advantages and logprobs: encode in
 * TypeScript, HTTP, decode on every rank).
 */
import { ascending, percentile } from '../shared/percentile.ts';
import { createSeededRandom } from '../tasks/seeded-random.ts';
import { encodeTrainerBatch, startTrainerService } from '../train/index.ts';

export type TrainerBenchOptions = {
  model: string;
  processes?: number[];
  steps?: number;
  warmupSteps?: number;
  sequences?: number;
  maxSequenceTokens?: number;
  microBatchTokens?: number;
  transferSequences?: number;
  transferSequenceTokens?: number;
  onProgress?: (message: string) => void;
};

export type StepFigures = {
  tokensPerSecondP50: number;
  tokensPerSecondP99Low: number;
  stepMsP50: number;
  stepMsP99: number;
};

export type ProcessFigures = {
  processes: number;
  sft: StepFigures;
  grpo: StepFigures;
  /** (peak − baseline) resident bytes per parameter on CPU; allocator peak per parameter on GPU. */
  peakBytesPerParameter: number;
  peakMemoryBytes: number;
  device: string;
  /** SFT tokens/s ÷ the 1-process run's. */
  sftRatioToOneProcess: number | null;
};

export type TrainerBenchReport = {
  model: string;
  parameters: number;
  batchSequences: number;
  batchTokens: number;
  microBatchTokens: number;
  packedRealTokenShare: number;
  paddedRealTokenShare: number;
  runs: ProcessFigures[];
  transfer: {
    sequences: number;
    tokens: number;
    bytes: number;
    encodeMs: number;
    roundTripMs: number;
    decodeMs: number;
  };
};

/** Long-tailed lengths (most short, a few near the maximum), as RL and SFT batches are. */
export function batchLengths(count: number, maxTokens: number, seed: string): number[] {
  const random = createSeededRandom(seed);
  return Array.from({ length: count }, () => Math.max(16, Math.round(maxTokens * random() ** 2.5)));
}

/** Real-token share when micro-batches (first-fit decreasing by the budget) are packed vs padded. */
export function packingShares(
  lengths: readonly number[],
  budget: number,
): { packed: number; padded: number } {
  const bins: number[][] = [];
  const used: number[] = [];
  for (const length of [...lengths].sort((a, b) => b - a)) {
    const slot = used.findIndex((total) => total + length <= budget);
    if (slot === -1) {
      bins.push([length]);
      used.push(length);
    } else {
      bins[slot]!.push(length);
      used[slot]! += length;
    }
  }
  const real = lengths.reduce((sum, length) => sum + length, 0);
  const packedSlots = bins.reduce(
    (sum, members) => sum + members.reduce((total, length) => total + length, 0),
    0,
  );
  const paddedSlots = bins.reduce((sum, members) => sum + members.length * Math.max(...members), 0);
  return { packed: real / packedSlots, padded: real / paddedSlots };
}

function figures(stepMs: number[], tokens: number): StepFigures {
  const sorted = ascending(stepMs);
  const p50 = percentile(sorted, 0.5);
  const p99 = percentile(sorted, 0.99);
  return {
    tokensPerSecondP50: tokens / (p50 / 1000),
    tokensPerSecondP99Low: tokens / (p99 / 1000),
    stepMsP50: p50,
    stepMsP99: p99,
  };
}

export async function runTrainerBench(options: TrainerBenchOptions): Promise<TrainerBenchReport> {
  const {
    model,
    processes = [1, 2],
    steps = 5,
    warmupSteps = 1,
    sequences = 16,
    maxSequenceTokens = 512,
    microBatchTokens = 1024,
    transferSequences = 512,
    transferSequenceTokens = 16_384,
    onProgress = () => {},
  } = options;
  const lengths = batchLengths(sequences, maxSequenceTokens, 'trainer-bench');
  const random = createSeededRandom('trainer-bench-ids');
  const runs: ProcessFigures[] = [];
  let parameters = 0;
  let transfer: TrainerBenchReport['transfer'] | null = null;
  for (const count of processes) {
    onProgress(`${count} process(es): starting the trainer`);
    const service = await startTrainerService({ model, processes: count, microBatchTokens });
    try {
      const state = await service.client.state();
      parameters = state.parameters;
      const vocabulary = 300; // ids below any real vocabulary of the models this runs on
      const batch = lengths.map((length) => {
        const inputIds = Array.from({ length }, () => Math.floor(random() * vocabulary));
        return { inputIds, lossMask: inputIds.map((_, index) => (index >= length / 4 ? 1 : 0)) };
      });
      const sftMs: number[] = [];
      for (let step = 0; step < warmupSteps + steps; step++) {
        const result = await service.client.sftStep({ sequences: batch, learningRate: 1e-4 });
        if (step >= warmupSteps) sftMs.push(result.stepMs);
        onProgress(
          `${count} process(es): SFT step ${step + 1}/${warmupSteps + steps} ${result.stepMs.toFixed(0)} ms`,
        );
      }
      const scored = await service.client.score(batch.map((sequence) => sequence.inputIds));
      const grpoBatch = batch.map((sequence, index) => ({
        ...sequence,
        advantage: index % 2 === 0 ? 1 : -1,
        oldLogprobs: scored.tokenLogprobs[index]!,
      }));
      const grpoMs: number[] = [];
      for (let step = 0; step < warmupSteps + steps; step++) {
        const result = await service.client.grpoStep({
          sequences: grpoBatch,
          learningRate: 1e-4,
          temperature: 1,
        });
        if (step >= warmupSteps) grpoMs.push(result.stepMs);
        onProgress(
          `${count} process(es): GRPO step ${step + 1}/${warmupSteps + steps} ${result.stepMs.toFixed(0)} ms`,
        );
      }
      const after = await service.client.state();
      const total = lengths.reduce((sum, length) => sum + length, 0);
      const held = after.peakMemoryBytes - after.baselineMemoryBytes;
      const sft = figures(sftMs, total);
      runs.push({
        processes: count,
        sft,
        grpo: figures(grpoMs, total),
        peakBytesPerParameter: held / Math.max(1, after.parameters),
        peakMemoryBytes: after.peakMemoryBytes,
        device: after.device,
        sftRatioToOneProcess: runs[0] ? sft.tokensPerSecondP50 / runs[0].sft.tokensPerSecondP50 : null,
      });
      if (transfer === null) {
        onProgress(`transfer: encoding ${transferSequences} × ${transferSequenceTokens} tokens`);
        const big = Array.from({ length: transferSequences }, () => {
          const inputIds = new Array<number>(transferSequenceTokens).fill(7);
          return {
            inputIds,
            lossMask: inputIds.map((_, index) => (index > 256 ? 1 : 0)),
            advantage: 0.5,
            oldLogprobs: new Array<number>(transferSequenceTokens).fill(-1.5),
          };
        });
        const encodeStart = performance.now();
        const bytes = encodeTrainerBatch(big, { learningRate: 1e-6 });
        const encodeMs = performance.now() - encodeStart;
        const sendStart = performance.now();
        const probe = await service.client.transferProbe(bytes);
        transfer = {
          sequences: probe.sequences,
          tokens: probe.tokens,
          bytes: bytes.length,
          encodeMs,
          roundTripMs: performance.now() - sendStart,
          decodeMs: probe.decodeMs,
        };
      }
    } finally {
      await service.stop();
    }
  }
  const shares = packingShares(lengths, microBatchTokens);
  return {
    model,
    parameters,
    batchSequences: sequences,
    batchTokens: lengths.reduce((sum, length) => sum + length, 0),
    microBatchTokens,
    packedRealTokenShare: shares.packed,
    paddedRealTokenShare: shares.padded,
    runs,
    transfer: transfer ?? { sequences: 0, tokens: 0, bytes: 0, encodeMs: 0, roundTripMs: 0, decodeMs: 0 },
  };
}

/** The report as the table `bench trainer` prints. */
export function renderTrainerBench(report: TrainerBenchReport): string {
  const lines = [
    `model ${report.model} (${report.parameters.toLocaleString('en-US')} parameters); batch ${report.batchSequences} sequences, ${report.batchTokens} tokens; micro-batch budget ${report.microBatchTokens}`,
    '',
    'procs | SFT tok/s p50 (p99 step) | GRPO tok/s p50 (p99 step) | SFT vs 1 proc | peak bytes/param | device',
    '----- | ------------------------ | ------------------------- | ------------- | ---------------- | ------',
  ];
  for (const run of report.runs) {
    lines.push(
      `${String(run.processes).padEnd(5)} | ${run.sft.tokensPerSecondP50.toFixed(0)} (${run.sft.stepMsP99.toFixed(0)} ms) | ` +
        `${run.grpo.tokensPerSecondP50.toFixed(0)} (${run.grpo.stepMsP99.toFixed(0)} ms) | ` +
        `${run.sftRatioToOneProcess === null ? 'baseline' : `${run.sftRatioToOneProcess.toFixed(2)}x`} | ` +
        `${run.peakBytesPerParameter.toFixed(0)} | ${run.device}`,
    );
  }
  const t = report.transfer;
  lines.push(
    '',
    `real-token share: packed ${(100 * report.packedRealTokenShare).toFixed(1)}%, padded to each micro-batch's longest ${(100 * report.paddedRealTokenShare).toFixed(1)}%`,
    `batch transfer at paper scale: ${t.sequences} × ${t.sequences ? t.tokens / t.sequences : 0} tokens, ${(t.bytes / 2 ** 20).toFixed(0)} MiB: ` +
      `encode ${(t.encodeMs / 1000).toFixed(2)} s, send + decode on every rank ${(t.roundTripMs / 1000).toFixed(2)} s (decode ${(t.decodeMs / 1000).toFixed(2)} s)`,
  );
  return `${lines.join('\n')}\n`;
}
