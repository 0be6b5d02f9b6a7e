/**
 * The run's derived outputs, written when the run ends (from the append-only files, so a
 * resumed run writes the same): `sharegpt.json` (LLaMA-Factory ShareGPT: human, then gpt and
 * observation turns alternating, so interpreter output is not trained on), `verl.parquet`
 * (one row per trajectory: data_source, prompt and messages as chat JSON, response, ability,
 * reward_model, extra_info) and `stats.json`.
 */
import { writeFile } from 'node:fs/promises';
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { Trajectory } from '../trajectory/trajectory.ts';
import type { SynthInputSkip } from './read-synth-input.ts';

/**
 * One line of `records.jsonl`: what became of an input record. `outage`: the teacher or the
 * sandbox was unavailable (`detail.cause` says why); not a result, so `--resume` retries the
 * record and a later line for the same id replaces this one.
 */
export type RecordLine = {
  id: string;
  status: 'kept' | 'dropped' | 'outage';
  stage: string | null;
  reason: string | null;
  detail?: unknown;
  notes: string[];
  teacherTokens: number;
  toolCalls: number;
  tokens: number;
};

/** ShareGPT conversations (LLaMA-Factory `formatting: sharegpt`, tags human/gpt/observation). */
export function toShareGpt(trajectories: readonly Trajectory[]): unknown[] {
  return trajectories.map((trajectory) => ({
    id: trajectory.problemId,
    conversations: [
      { from: 'human', value: trajectory.prompt.text },
      ...trajectory.segments.map((segment) => ({
        from: segment.kind === 'model' ? 'gpt' : 'observation',
        value: segment.text,
      })),
    ],
  }));
}

function chatMessages(trajectory: Trajectory): { role: string; content: string }[] {
  return [
    { role: 'user', content: trajectory.prompt.text },
    ...trajectory.segments.map((segment) => ({
      role: segment.kind === 'model' ? 'assistant' : 'tool',
      content: segment.text,
    })),
  ];
}

/** Writes `verl.parquet`. */
export async function writeVerlParquet(file: string, trajectories: readonly Trajectory[]): Promise<void> {
  const reference = (trajectory: Trajectory) => {
    const synth = (trajectory.meta as { synth?: { reference?: string | null } } | undefined)?.synth;
    return synth?.reference ?? trajectory.answer ?? '';
  };
  const buffer = parquetWriteBuffer({
    columnData: [
      { name: 'data_source', data: trajectories.map(() => 'agentmath-synth'), type: 'STRING' },
      {
        name: 'id',
        data: trajectories.map((trajectory) => trajectory.problemId ?? trajectory.id),
        type: 'STRING',
      },
      {
        name: 'prompt',
        data: trajectories.map((trajectory) =>
          JSON.stringify([{ role: 'user', content: trajectory.prompt.text }]),
        ),
        type: 'STRING',
      },
      {
        name: 'messages',
        data: trajectories.map((trajectory) => JSON.stringify(chatMessages(trajectory))),
        type: 'STRING',
      },
      {
        name: 'response',
        data: trajectories.map((trajectory) => trajectory.segments.map((segment) => segment.text).join('')),
        type: 'STRING',
      },
      { name: 'ability', data: trajectories.map(() => 'math'), type: 'STRING' },
      {
        name: 'reward_model',
        data: trajectories.map((trajectory) =>
          JSON.stringify({ style: 'rule', ground_truth: reference(trajectory) }),
        ),
        type: 'STRING',
      },
      {
        name: 'extra_info',
        data: trajectories.map((trajectory) => JSON.stringify({ tool_calls: trajectory.toolCalls.length })),
        type: 'STRING',
      },
    ],
  });
  await writeFile(file, new Uint8Array(buffer));
}

function summary(values: number[]): { mean: number; min: number; max: number } {
  if (values.length === 0) return { mean: 0, min: 0, max: 0 };
  return {
    mean: values.reduce((a, b) => a + b, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

export type SynthStats = ReturnType<typeof buildStats>;

/** Kept and dropped counts per stage and reason (with the dropped ids), and per-sample figures. */
export function buildStats(options: {
  lines: readonly RecordLine[];
  skipped: readonly SynthInputSkip[];
  teacher: {
    /** HTTP requests the server received (retries included). */
    requests: number;
    answered: number;
    /** Requests that still failed after every retry. */
    failed: number;
    promptTokens: number;
    completionTokens: number;
    costUsd: number;
  };
  stages: readonly string[];
}) {
  const { lines, skipped, teacher, stages } = options;
  const kept = lines.filter((line) => line.status === 'kept');
  const dropped: Record<string, Record<string, { count: number; ids: string[] }>> = {};
  const outages = { count: 0, ids: [] as string[], causes: {} as Record<string, number> };
  for (const line of lines) {
    if (line.status !== 'outage') continue;
    const cause = (line.detail as { cause?: unknown } | undefined)?.cause;
    const key = `${line.reason ?? 'unavailable'}: ${typeof cause === 'string' ? cause : 'unknown cause'}`;
    outages.count++;
    outages.ids.push(line.id);
    outages.causes[key] = (outages.causes[key] ?? 0) + 1;
  }
  for (const line of lines) {
    if (line.status !== 'dropped') continue;
    const stageName = line.stage ?? 'unknown';
    const reasonName = line.reason ?? 'unknown';
    const stage = dropped[stageName] ?? {};
    dropped[stageName] = stage;
    const reason = stage[reasonName] ?? { count: 0, ids: [] };
    stage[reasonName] = reason;
    reason.count++;
    reason.ids.push(line.id);
  }
  const notes: Record<string, number> = {};
  for (const line of kept) for (const note of line.notes) notes[note] = (notes[note] ?? 0) + 1;
  const toolCallHistogram: Record<string, number> = {};
  for (const line of kept)
    toolCallHistogram[String(line.toolCalls)] = (toolCallHistogram[String(line.toolCalls)] ?? 0) + 1;
  return {
    stages,
    records: lines.length,
    kept: kept.length,
    droppedTotal: lines.length - kept.length - outages.count,
    dropped,
    /** Records lost to a teacher or sandbox outage: retried by `--resume`. */
    outages,
    inputSkipped: { count: skipped.length, rows: skipped },
    repairs: notes,
    toolCallsPerSample: { ...summary(kept.map((line) => line.toolCalls)), histogram: toolCallHistogram },
    tokensPerSample: summary(kept.map((line) => line.tokens)),
    teacher,
  };
}
