/**
 * A rollout run of several steps with its records: the steps in order, each one's trajectories,
 * groups and statistics appended as they happen, a checkpoint after each step, and resume after
 * a kill (see `rollout-records.ts`). Parked trajectories whose sandbox sessions died with the
 * process are resumed in fresh sessions that replay their earlier code cells (the agent loop
 * does this when the park does not hold the session). Problems are taken in order, cycling
 * over the list; one step takes at most one pass over it.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { readRunConfigFile } from '../shared/run-config-file.ts';
import { RUN_FOLDER_REFUSED } from '../shared/run-folder-check.ts';
import { assertSameRun, type RunIdentity } from '../shared/run-identity.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import { PROBLEM_HISTORY_FILE, ProblemHistory, type ProblemHistoryLine } from './problem-history.ts';
import { ProblemSkipper } from './problem-skipper.ts';
import type { RolloutConfig } from './rollout-config.ts';
import {
  ROLLOUT_FILES,
  type RolloutCheckpoint,
  RolloutRecordError,
  RolloutRecords,
  readCheckpoint,
  readRunLines,
  truncateToStep,
} from './rollout-records.ts';
import { initialRolloutState, runRolloutStep } from './run-rollout-step.ts';
import type { SkipRuleOptions } from './skip-rule.ts';
import type {
  RolloutParts,
  RolloutProblem,
  RolloutState,
  RolloutStepInput,
  RolloutStepResult,
  StepStats,
} from './types.ts';

export type RolloutRunOptions = {
  folder: string;
  resume: boolean;
  /** Saved as config.json; a resume with a different one is refused. */
  definingConfig: Record<string, unknown>;
  steps: number;
  problems: readonly RolloutProblem[];
  config: RolloutConfig;
  agent?: RolloutStepInput['agent'];
  /** The policy version each step runs with (a function when training changes it between steps). */
  policyVersion?: number | (() => number);
  /**
   * Runs after a step's rollout and before the step is committed (`checkpoint.json`): a trainer
   * updates the policy here. A kill before the commit redoes the whole step on resume.
   */
  afterStep?: (result: RolloutStepResult, step: number) => Promise<void>;
  /**
   * Overlap of rollout with training (`afterStep`): the rollout of step j starts once step
   * j − 1 − `overlap` is committed, so with 1 the next step's rollout runs while this step
   * trains. Steps are still committed in order, one at a time. Default 0: synchronous.
   */
  overlap?: number;
  /** Called when a step's rollout ends, before it waits for earlier steps to commit. */
  onRolloutEnd?: (result: RolloutStepResult, step: number) => void;
  /** Checked before each step; false ends the run at that step boundary (a time budget). */
  shouldContinue?: () => boolean;
  parts: Omit<RolloutParts, 'onEvent'>;
  onEvent?: RolloutParts['onEvent'];
  onStep?: (stats: StepStats) => void;
  /** Write `problem-history.jsonl` (on with `skipHistory`). */
  recordHistory?: boolean;
  /**
   * Pre-rollout skipping from the history (`--skip-history`): the rule's options, and a uniform
   * draw in [0, 1) fixed by its key (the run's seed goes into it).
   */
  skipHistory?: { rule: SkipRuleOptions; draw: (key: string) => number };
};

export type RolloutRunResult = { steps: StepStats[]; resumedFrom: number };

/** A run folder used the wrong way: a run there without `resume` (the CLI exits 2). */
export class RolloutRunConfigError extends AgentMathError {
  constructor(message: string) {
    super(RUN_FOLDER_REFUSED, message);
  }
}

/**
 * Read-only: whether `folder` holds a run (its config.json), refusing without writing anything
 * when that run's saved configuration differs from `config` (`RUN_IDENTITY_MISMATCH`, naming
 * every differing field) or when it holds a run and `resume` is false.
 */
export async function assertRunIdentity(
  folder: string,
  config: Record<string, unknown>,
  resume: boolean,
): Promise<boolean> {
  const path = join(folder, ROLLOUT_FILES.config);
  if (!existsSync(path)) return false;
  if (!resume)
    throw new RolloutRunConfigError(`${folder} already holds a run: pass --resume, or another --out`);
  const saved = (await readRunConfigFile(path)) as RunIdentity;
  assertSameRun({
    run: folder,
    saved,
    current: JSON.parse(JSON.stringify(config)) as RunIdentity,
    fresh: 'pass another --out (without --resume) to start a new run',
  });
  return true;
}

/** Checks the folder as `assertRunIdentity` does, then saves config.json when the run is new. */
export async function checkRunIdentity(
  folder: string,
  config: Record<string, unknown>,
  resume: boolean,
): Promise<void> {
  if (await assertRunIdentity(folder, config, resume)) return;
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, ROLLOUT_FILES.config), `${JSON.stringify(config, null, 2)}\n`);
}

export async function runRollout(options: RolloutRunOptions): Promise<RolloutRunResult> {
  const { folder, config, problems } = options;
  if (problems.length === 0) throw new RolloutRecordError('no problems to roll out');
  await checkRunIdentity(folder, options.definingConfig, options.resume);
  const records = new RolloutRecords(folder);
  const checkpoint = options.resume ? await readCheckpoint(folder) : null;
  const nextStep = checkpoint?.nextStep ?? 0;
  const known = await truncateToStep(folder, nextStep);
  let state: RolloutState =
    checkpoint === null ? initialRolloutState() : stateFrom(checkpoint, known, folder);
  let taken = checkpoint?.problemsTaken ?? 0;
  const history =
    options.recordHistory === true || options.skipHistory !== undefined
      ? ProblemHistory.fromLines(
          (await readRunLines(join(folder, PROBLEM_HISTORY_FILE))) as ProblemHistoryLine[],
        )
      : null;
  const skipper =
    history === null || options.skipHistory === undefined
      ? null
      : new ProblemSkipper({ history, ...options.skipHistory });
  // The pass over the problem set a problem was last drawn in, for its group's history line;
  // groups parked across a resume keep theirs in the checkpoint.
  const drawnEpoch = new Map<string, number>();
  for (const parked of checkpoint?.parked ?? []) {
    if (parked.epoch !== undefined) drawnEpoch.set(parked.problem.id, parked.epoch);
  }
  const distinctProblems = new Set(problems.map((problem) => problem.id)).size;
  const steps: StepStats[] = [];
  const overlap = options.overlap ?? 0;
  // Steps rolled out whose training and commit are still running, oldest first.
  const committing: Promise<void>[] = [];
  let failure: { error: unknown } | null = null;
  // A failed commit stops the rollout running beside it.
  const stop = new AbortController();
  const signal =
    options.parts.signal === undefined ? stop.signal : AbortSignal.any([options.parts.signal, stop.signal]);
  for (let step = nextStep; step < options.steps; step++) {
    while (committing.length > overlap) await committing.shift();
    if (failure !== null) break;
    if (options.shouldContinue !== undefined && !options.shouldContinue()) break;
    let takenThisStep = 0;
    let skippedThisStep = 0;
    const source = {
      next: (): RolloutProblem | null => {
        for (;;) {
          if (takenThisStep >= problems.length) return null;
          takenThisStep++;
          const index = taken++;
          const problem = problems[index % problems.length] as RolloutProblem;
          const epoch = Math.floor(index / distinctProblems);
          // At most one pass of skips a step: past it, problems run whatever their history says.
          const skip =
            skipper === null || skippedThisStep >= problems.length
              ? null
              : skipper.consider(problem, epoch, step);
          if (skip !== null) {
            skippedThisStep++;
            records.appendHistory(skip);
            continue;
          }
          drawnEpoch.set(problem.id, epoch);
          return problem;
        }
      },
    };
    let result: RolloutStepResult;
    try {
      result = await runRolloutStep(
        {
          step,
          policyVersion:
            typeof options.policyVersion === 'function'
              ? options.policyVersion()
              : (options.policyVersion ?? 0),
          state,
          problems: source,
          config,
          ...(options.agent === undefined ? {} : { agent: options.agent }),
        },
        {
          ...options.parts,
          signal,
          onEvent: (event) => {
            if (event.type === 'group-decide') {
              records.appendGroup(event.group);
              if (history !== null)
                records.appendHistory(
                  history.recordGroup(event.group, drawnEpoch.get(event.group.problem.id) ?? null),
                );
            } else records.appendTrajectory(event.trajectory, event.step);
            options.onEvent?.(event);
          },
        },
      );
    } catch (error) {
      // Steps already rolled out still commit (less to redo); a commit's failure comes first.
      await Promise.all(committing);
      throw failure === null ? error : (failure as { error: unknown }).error;
    }
    if (failure !== null) break;
    if (skipper !== null) result.stats.problemsSkipped = skippedThisStep;
    options.onRolloutEnd?.(result, step);
    state = result.state;
    const commit = checkpointOf(step + 1, state, taken, drawnEpoch);
    const previous = committing.at(-1) ?? Promise.resolve();
    const committed = previous.then(async () => {
      if (failure !== null) return;
      try {
        if (options.afterStep !== undefined) await options.afterStep(result, step);
        records.appendStep(result.stats);
        await records.commit(commit);
        steps.push(result.stats);
        options.onStep?.(result.stats);
      } catch (error) {
        failure = { error };
        stop.abort(error);
      }
    });
    committing.push(committed);
  }
  await Promise.all(committing);
  if (failure !== null) throw (failure as { error: unknown }).error;
  return { steps, resumedFrom: nextStep };
}

function checkpointOf(
  nextStep: number,
  state: RolloutState,
  problemsTaken: number,
  drawnEpoch: ReadonlyMap<string, number>,
): RolloutCheckpoint {
  return {
    nextStep,
    stage: state.stage,
    problemsTaken,
    parked: state.parked.map((group) => {
      const epoch = drawnEpoch.get(group.problem.id);
      return {
        problem: group.problem,
        startedStep: group.startedStep,
        ...(epoch === undefined ? {} : { epoch }),
        trajectoryIds: group.trajectories.map((trajectory) => trajectory?.id ?? null),
      };
    }),
  };
}

function stateFrom(
  checkpoint: RolloutCheckpoint,
  known: Map<string, Trajectory>,
  folder: string,
): RolloutState {
  return {
    stage: checkpoint.stage,
    parked: checkpoint.parked.map((group) => ({
      problem: group.problem,
      startedStep: group.startedStep,
      trajectories: group.trajectoryIds.map((id) => {
        if (id === null) return null;
        const trajectory = known.get(id);
        if (trajectory === undefined) {
          throw new RolloutRecordError(
            `${join(folder, ROLLOUT_FILES.checkpoint)}: parked trajectory ${id} is not in ${ROLLOUT_FILES.trajectories}`,
          );
        }
        return trajectory;
      }),
    })),
  };
}
