/**
 * `agentmath synth run` as a batch job. Records are processed by `concurrency` workers under a
 * request-rate limit; each result is appended as it arrives (`trajectories.jsonl` first, then
 * its line in `records.jsonl`), every teacher answer is journaled before use
 * (`teacher-journal.jsonl`), and `--resume` after kill -9 skips finished records, drops a
 * trajectory whose record line never landed, and answers repeated requests from the journal,
 * so no paid request is made twice. The derived outputs (`sharegpt.json`, `verl.parquet`,
 * `stats.json`) are written at the end from those files.
 *
 * Run folder: synth-run.json (the resolved configuration), records.jsonl, trajectories.jsonl,
 * teacher-journal.jsonl, sharegpt.json, verl.parquet, stats.json.
 */
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { createByteLevelTokenizer } from '../engine/byte-level-tokenizer.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import { parseTrajectoryLine } from '../trajectory/trajectory-jsonl.ts';
import { buildDecontaminationIndex } from './decontamination.ts';
import { processRecord } from './process-record.ts';
import { RateLimiter } from './rate-limiter.ts';
import { readSynthInput } from './read-synth-input.ts';
import {
  definingConfig,
  resolveSynthConfig,
  type SynthConfig,
  type SynthConfigInput,
} from './synth-config.ts';
import {
  buildStats,
  type RecordLine,
  type SynthStats,
  toShareGpt,
  writeVerlParquet,
} from './synth-outputs.ts';
import { loadSynthPrompts } from './synth-prompts.ts';
import type { Teacher } from './teacher.ts';
import { JournaledTeacher, readTeacherJournal } from './teacher-journal.ts';

export type SynthEvent =
  | {
      type: 'synth-start';
      config: SynthConfig;
      total: number;
      resumed: number;
      skippedRows: number;
      indexedFiles: string[];
    }
  | {
      type: 'synth-progress';
      done: number;
      total: number;
      kept: number;
      elapsedMs: number;
      etaMs: number | null;
      teacherTokens: number;
      costUsd: number;
      requests: number;
    }
  | { type: 'synth-finish'; stats: SynthStats; dir: string };

export type SynthRunOptions = {
  dir: string;
  config: SynthConfigInput;
  resume?: boolean;
  /** The teacher; wrapped in the journal here. */
  teacher: Teacher;
  sandbox: SandboxProvider;
  clock?: Clock;
  onEvent?: (event: SynthEvent) => void;
  signal?: AbortSignal;
};

/** The run folder is not in the state the flags ask for. */
export class SynthRunFolderError extends AgentMathError {
  constructor(message: string) {
    super('SYNTH_RUN_FOLDER', message);
  }
}

async function readLines(file: string): Promise<string[]> {
  try {
    return (await readFile(file, 'utf8')).split('\n');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** Finished records; a torn last line is ignored (its record runs again, from the journal). */
async function readRecordLines(file: string): Promise<RecordLine[]> {
  const lines: RecordLine[] = [];
  const seen = new Set<string>();
  for (const text of await readLines(file)) {
    if (text.trim() === '') continue;
    try {
      const line = JSON.parse(text) as RecordLine;
      if (!seen.has(line.id)) lines.push(line);
      seen.add(line.id);
    } catch {
      // cut by a crash
    }
  }
  return lines;
}

/** Rewrites `trajectories.jsonl` to the kept records that have a record line, once each. */
async function reconcileTrajectories(file: string, kept: ReadonlySet<string>): Promise<Trajectory[]> {
  const trajectories: Trajectory[] = [];
  const seen = new Set<string>();
  const lines = await readLines(file);
  for (let index = 0; index < lines.length; index++) {
    const text = lines[index]!;
    if (text.trim() === '') continue;
    let trajectory: Trajectory;
    try {
      trajectory = parseTrajectoryLine(text, { file, line: index + 1 });
    } catch {
      continue; // a torn line
    }
    const id = trajectory.problemId ?? '';
    if (!kept.has(id) || seen.has(id)) continue;
    seen.add(id);
    trajectories.push(trajectory);
  }
  await writeFile(file, trajectories.map((trajectory) => `${JSON.stringify(trajectory)}\n`).join(''));
  return trajectories;
}

async function teacherTotals(file: string, config: SynthConfig) {
  const answers = await readTeacherJournal(file);
  let promptTokens = 0;
  let completionTokens = 0;
  for (const answer of answers.values()) {
    promptTokens += answer.promptTokens;
    completionTokens += answer.completionTokens;
  }
  const costUsd =
    (promptTokens * config.priceInputPerMillion + completionTokens * config.priceOutputPerMillion) / 1e6;
  return { requests: answers.size, promptTokens, completionTokens, costUsd };
}

/** Runs (or resumes) a synthesis job in `dir` and returns its stats. */
export async function runSynth(options: SynthRunOptions): Promise<SynthStats> {
  const dir = resolve(options.dir);
  const clock = options.clock ?? systemClock;
  const emit = options.onEvent ?? (() => {});
  const config = resolveSynthConfig(options.config);
  await mkdir(dir, { recursive: true });
  const files = {
    run: join(dir, 'synth-run.json'),
    records: join(dir, 'records.jsonl'),
    trajectories: join(dir, 'trajectories.jsonl'),
    journal: join(dir, 'teacher-journal.jsonl'),
  };
  const savedText = (await readLines(files.run)).join('\n');
  if (savedText.trim() !== '' && !options.resume) {
    throw new SynthRunFolderError(
      `${dir} already holds a synthesis run; pass --resume to continue it or choose another --out`,
    );
  }
  if (savedText.trim() !== '') {
    const saved = JSON.parse(savedText) as SynthConfig;
    const before = definingConfig(resolveSynthConfig(saved));
    const now = definingConfig(config);
    const changed = Object.keys({ ...before, ...now }).filter(
      (key) => !isDeepStrictEqual(before[key], now[key]),
    );
    if (changed.length > 0) {
      throw new SynthRunFolderError(
        `${dir}: --resume with a different configuration (${changed.join(', ')}); use the original flags or another --out`,
      );
    }
  } else if (options.resume && (await readLines(files.records)).length > 0) {
    throw new SynthRunFolderError(`${dir}: no synth-run.json to resume from`);
  }

  const input = await readSynthInput(config.input, config.fields);
  const records = config.limit === null ? input.records : input.records.slice(0, config.limit);
  // Saved once the input is readable, so a typo in --input leaves no run behind.
  await writeFile(files.run, `${JSON.stringify(config, null, 2)}\n`);
  const stages = new Set(config.stages);
  const { index, files: indexedFiles } = stages.has('decontaminate')
    ? await buildDecontaminationIndex({
        dataDir: config.dataDir,
        extraFiles: config.decontaminate,
        n: config.ngram,
      })
    : { index: null, files: [] };
  const prompts = await loadSynthPrompts(config.prompt ?? undefined);

  const finished = await readRecordLines(files.records);
  const doneIds = new Set(finished.map((line) => line.id));
  await reconcileTrajectories(
    files.trajectories,
    new Set(finished.filter((line) => line.status === 'kept').map((line) => line.id)),
  );
  const pending = records.filter((record) => !doneIds.has(record.id));
  emit({
    type: 'synth-start',
    config,
    total: records.length,
    resumed: doneIds.size,
    skippedRows: input.skipped.length,
    indexedFiles,
  });

  const limiter = new RateLimiter(config.ratePerMinute, clock);
  // The rate limit applies to requests that reach the network, not to journal hits.
  const limited: Teacher = {
    complete: async (request, signal) => {
      await limiter.take(signal);
      return options.teacher.complete(request, signal);
    },
  };
  const journaled = new JournaledTeacher({
    inner: limited,
    file: files.journal,
    model: config.model,
    answers: await readTeacherJournal(files.journal),
  });
  const tokenizer = createByteLevelTokenizer();
  const started = clock.now();
  let done = 0;
  let kept = finished.filter((line) => line.status === 'kept').length;
  let appendTail: Promise<void> = Promise.resolve();
  let next = 0;

  const worker = async () => {
    while (next < pending.length && !options.signal?.aborted) {
      const record = pending[next++]!;
      const outcome = await processRecord({
        record,
        teacher: journaled,
        sandbox: options.sandbox,
        prompts,
        stages,
        decontamination: index,
        rationality: {
          maxTrivialLines: config.maxTrivialLines,
          maxTrivialDepth: config.maxTrivialDepth,
          trivialConstantBelow: config.trivialConstantBelow,
          trivial: config.trivial,
        },
        onMismatch: config.onMismatch,
        timeoutMs: config.timeoutMs,
        maxTokens: config.maxTokens,
        temperature: config.temperature,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
      if (options.signal?.aborted) return;
      const line: RecordLine =
        outcome.status === 'kept'
          ? {
              id: record.id,
              status: 'kept',
              stage: null,
              reason: null,
              notes: outcome.notes,
              teacherTokens: outcome.teacherTokens,
              toolCalls: outcome.trajectory.toolCalls.length,
              tokens: outcome.trajectory.segments.reduce(
                (total, segment) => total + tokenizer.encode(segment.text, { specialTokens: false }).length,
                0,
              ),
            }
          : {
              id: record.id,
              status: 'dropped',
              stage: outcome.drop.stage,
              reason: outcome.drop.reason,
              ...(outcome.drop.detail === undefined ? {} : { detail: outcome.drop.detail }),
              notes: [],
              teacherTokens: outcome.teacherTokens,
              toolCalls: 0,
              tokens: 0,
            };
      const write = appendTail.then(async () => {
        if (outcome.status === 'kept')
          await appendFile(files.trajectories, `${JSON.stringify(outcome.trajectory)}\n`);
        await appendFile(files.records, `${JSON.stringify(line)}\n`);
      });
      appendTail = write.catch(() => {});
      await write;
      done++;
      if (outcome.status === 'kept') kept++;
      const elapsedMs = clock.now() - started;
      const spent = journaled.promptTokens + journaled.completionTokens;
      emit({
        type: 'synth-progress',
        done: doneIds.size + done,
        total: records.length,
        kept,
        elapsedMs,
        etaMs: done === 0 ? null : (elapsedMs / done) * (pending.length - done),
        teacherTokens: spent,
        costUsd:
          (journaled.promptTokens * config.priceInputPerMillion +
            journaled.completionTokens * config.priceOutputPerMillion) /
          1e6,
        requests: journaled.requests,
      });
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(config.concurrency, Math.max(1, pending.length)) }, worker),
  );
  if (options.signal?.aborted)
    throw new AgentMathError('SYNTH_INTERRUPTED', `synthesis stopped; continue with --resume --out ${dir}`);

  const lines = await readRecordLines(files.records);
  const trajectories = await reconcileTrajectories(
    files.trajectories,
    new Set(lines.filter((line) => line.status === 'kept').map((line) => line.id)),
  );
  await writeFile(join(dir, 'sharegpt.json'), `${JSON.stringify(toShareGpt(trajectories), null, 1)}\n`);
  await writeVerlParquet(join(dir, 'verl.parquet'), trajectories);
  const stats = buildStats({
    lines,
    skipped: input.skipped,
    teacher: await teacherTotals(files.journal, config),
    stages: config.stages,
  });
  await writeFile(join(dir, 'stats.json'), `${JSON.stringify(stats, null, 2)}\n`);
  emit({ type: 'synth-finish', stats, dir });
  return stats;
}
