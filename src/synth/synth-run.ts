/**
 * `agentmath synth run` as a batch job. Records are processed by `concurrency` workers under a
 * request-rate limit; each result is appended as it arrives (`trajectories.jsonl` first, then
 * its line in `records.jsonl`), every teacher answer is journaled before use
 * (`teacher-journal.jsonl`), and `--resume` after kill -9 skips finished records, drops a
 * trajectory whose record line never landed, and answers repeated requests from the journal,
 * so no paid request is made twice. A record lost to a teacher or sandbox outage is written as
 * an `outage` line with its cause and is retried by `--resume`. The derived outputs (`sharegpt.json`, `verl.parquet`,
 * `stats.json`) are written at the end from those files.
 *
 * Run folder: synth-run.json (the resolved configuration), records.jsonl, trajectories.jsonl,
 * teacher-journal.jsonl, sharegpt.json, verl.parquet, stats.json. A folder holding other files
 * is refused before anything is read or written (`run-folder-check.ts`), and synth-run.json is
 * written only once the input, the prompts and the decontamination files have been read.
 */
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createByteLevelTokenizer } from '../engine/byte-level-tokenizer.ts';
import { buildDecontaminationIndex } from '../eval/decontamination.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import { readRunConfigFile } from '../shared/run-config-file.ts';
import { checkRunFolder, RUN_FOLDER_REFUSED } from '../shared/run-folder-check.ts';
import { assertSameRun, type RunIdentity } from '../shared/run-identity.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import { parseTrajectoryLine } from '../trajectory/trajectory-jsonl.ts';
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
import { JournaledTeacher, readTeacherJournal, readTeacherJournalContents } from './teacher-journal.ts';

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

/** The run folder is not in the state the flags ask for (the CLI exits 2). */
export class SynthRunFolderError extends AgentMathError {
  constructor(message: string) {
    super(RUN_FOLDER_REFUSED, message);
  }
}

/** Drops that say an outage, not the data: the record is retried on resume. */
function isOutage(reason: string | null): boolean {
  return reason === 'teacher-unavailable' || reason === 'sandbox-unavailable';
}

async function readLines(file: string): Promise<string[]> {
  try {
    return (await readFile(file, 'utf8')).split('\n');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * The last line of each record (an outage line is replaced by the retry's); a torn last line
 * is ignored (its record runs again, from the journal).
 */
async function readRecordLines(file: string): Promise<RecordLine[]> {
  const lines = new Map<string, RecordLine>();
  for (const text of await readLines(file)) {
    if (text.trim() === '') continue;
    try {
      const line = JSON.parse(text) as RecordLine;
      lines.set(line.id, line);
    } catch {
      // cut by a crash
    }
  }
  return [...lines.values()];
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
  const { answers, attempts, outages } = await readTeacherJournalContents(file);
  let promptTokens = 0;
  let completionTokens = 0;
  for (const answer of answers.values()) {
    promptTokens += answer.promptTokens;
    completionTokens += answer.completionTokens;
  }
  const costUsd =
    (promptTokens * config.priceInputPerMillion + completionTokens * config.priceOutputPerMillion) / 1e6;
  return {
    requests: attempts,
    answered: answers.size,
    failed: outages,
    promptTokens,
    completionTokens,
    costUsd,
  };
}

/**
 * Read-only: refuses a folder that holds other files, a run without `resume`, `resume` without
 * a run, and a resume whose defining configuration differs (`RUN_IDENTITY_MISMATCH`).
 */
export async function assertSynthFolder(dir: string, config: SynthConfig, resume: boolean): Promise<void> {
  let isRun: boolean;
  try {
    isRun = checkRunFolder({ folder: dir, marker: 'synth-run.json', resume, command: 'synth run' });
  } catch (error) {
    if ((error as { code?: unknown }).code === RUN_FOLDER_REFUSED)
      throw new SynthRunFolderError((error as Error).message);
    throw error;
  }
  if (!isRun) return;
  const saved = resolveSynthConfig(await readRunConfigFile(join(dir, 'synth-run.json')));
  assertSameRun({
    run: dir,
    saved: definingConfig(saved) as RunIdentity,
    current: definingConfig(config) as RunIdentity,
    fresh: 'pass another --out (without --resume) to start a new run',
  });
}

/** Runs (or resumes) a synthesis job in `dir` and returns its stats. */
export async function runSynth(options: SynthRunOptions): Promise<SynthStats> {
  const dir = resolve(options.dir);
  const clock = options.clock ?? systemClock;
  const emit = options.onEvent ?? (() => {});
  const config = resolveSynthConfig(options.config);
  const files = {
    run: join(dir, 'synth-run.json'),
    records: join(dir, 'records.jsonl'),
    trajectories: join(dir, 'trajectories.jsonl'),
    journal: join(dir, 'teacher-journal.jsonl'),
  };
  await assertSynthFolder(dir, config, options.resume === true);

  const input = await readSynthInput(config.input, config.fields);
  const records = config.limit === null ? input.records : input.records.slice(0, config.limit);
  const stages = new Set(config.stages);
  const { index, files: indexedFiles } = stages.has('decontaminate')
    ? await buildDecontaminationIndex({
        dataDir: config.dataDir,
        extraFiles: config.decontaminate,
        n: config.ngram,
      })
    : { index: null, files: [] };
  const prompts = await loadSynthPrompts(config.prompt ?? undefined);
  // Saved once every file the run reads was read, so a typo in a path leaves no run behind.
  await mkdir(dir, { recursive: true });
  await writeFile(files.run, `${JSON.stringify(config, null, 2)}\n`);

  const finished = (await readRecordLines(files.records)).filter((line) => line.status !== 'outage');
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
      const lostToOutage = outcome.status === 'dropped' && isOutage(outcome.drop.reason);
      const line: RecordLine =
        outcome.status === 'dropped' && lostToOutage
          ? {
              id: record.id,
              status: 'outage',
              stage: outcome.drop.stage,
              reason: outcome.drop.reason,
              detail: {
                cause:
                  outcome.drop.reason === 'teacher-unavailable'
                    ? (journaled.outages.get(record.id) ?? 'the teacher did not answer')
                    : 'the sandbox did not run the code',
              },
              notes: [],
              teacherTokens: outcome.teacherTokens,
              toolCalls: 0,
              tokens: 0,
            }
          : outcome.status === 'kept'
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
