/**
 * The quickstart pipeline, one for every model (the plan says which; quickstart-plan.ts):
 *   model      the starting model: pulled once, a folder as it is, or (the embedded default)
 *              a new byte model each SFT run initialises;
 *   eval-base  its evaluation on held-out arith (when the plan asks);
 *   sft-ARM    `train sft` on arith tool solutions (and text-only ones, the baseline arm) in the
 *              plan's dialect: the same SFT loop, trainer and export as every model;
 *   rl         `train rl` from the tool model on the problems where SFT left room: one local
 *              engine, one trainer rank, a disk sync after each step, sized by minutes;
 *   eval-*     each model on held-out arith, and the tool SFT and RL models on the RL problems'
 *              held-out split;
 *   report     the table, each stage's effect as the paired difference on the same problems
 *              (interval, McNemar p), the RL curves (report.html) and `quickstart.json`.
 * With `plan.parallel` the arms train side by side, RL starts as soon as the tool model is
 * ready, the arms' evaluations as soon as both arms are trained (beside RL), and RL's when RL
 * is done; otherwise one stage after another. Training runs
 * reuse a finished run of the same configuration and resume an interrupted one; evaluations
 * are recorded under `OUT/stages/` (stage-record.ts) and reused while their model is the same.
 * A training folder of an older AgentMath (the byte worker's layout) is kept beside, renamed
 * `<name>.old`, and trained again.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { BenchmarkProblem } from '../eval/benchmark-problem.ts';
import { escapeHtml } from '../eval/escape-html.ts';
import type { EvalProgress } from '../eval/eval-runner.ts';
import { type PairedDifference, pairedDifference } from '../eval/paired-difference.ts';
import { readRunTrajectories } from '../eval/run-folder.ts';
import { writeRunReport } from '../eval/run-report.ts';
import type { RunSummary } from '../eval/run-summary.ts';
import { readGrade } from '../eval/trajectory-grade.ts';
import { answersEquivalent } from '../grader/index.ts';
import { pulledModelFolder, pullModel } from '../model/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { arithBenchmark, arithEvalProblems } from '../tasks/index.ts';
import {
  INIT_MODEL_FOLDER,
  type RlEvent,
  readRlRun,
  readTrainingReport,
  resolveRlConfig,
  resolveSftConfig,
  rlDefiningConfig,
  rlReportSections,
  runRl,
  runSft,
  SFT_MODEL_FOLDER,
  type SftEvent,
  TRAINING_REPORT_FILE,
} from '../train/index.ts';
import { evaluateOnArith, problemGrades } from './arith-evaluation.ts';
import type { EvaluationStage } from './arith-evaluation-config.ts';
import { describeEffect } from './effect-sentence.ts';
import { type QuickstartArm, type QuickstartPlan, rlFolderName } from './quickstart-plan.ts';
import type { QuickstartRecord } from './quickstart-record.ts';
import { readStageState, recordStageFinish, recordStageStart } from './stage-record.ts';

/** The evaluated models: the starting one, each SFT arm (tool: `sft`, text: `sft-text`), and RL from the tool arm. */
export type QuickstartModel = 'baseline' | 'sft' | 'sft-text' | 'rl';

export const QUICKSTART_MODEL_LABELS: Record<QuickstartModel, string> = {
  baseline: 'base model',
  sft: 'SFT with tools',
  'sft-text': 'SFT text-only',
  rl: 'SFT with tools + RL',
};

/** The SFT arm's model and stage name. */
const ARM_MODEL: Record<QuickstartArm, 'sft' | 'sft-text'> = { tool: 'sft', text: 'sft-text' };

/** The training folders under `plan.trainRoot`. */
export const QUICKSTART_FOLDERS = { tool: 'arith-tool', text: 'arith-text', rl: 'arith-tool-rl' } as const;
/** Written into the RL folder when its run is over, with what it was run from. */
const RL_DONE_FILE = 'quickstart-rl.json';
/** Written into the RL folder when its run starts: an unfinished run is resumed only from the same. */
const RL_STARTED_FILE = 'quickstart-rl-started.json';
const RESULT_FILE = 'quickstart.json';

export type QuickstartOptions = {
  plan: QuickstartPlan;
  /** The project folder whose `.agentmath/models/` holds pulled models. */
  root: string;
  outDir: string;
  /** Train (and evaluate) every stage again. */
  retrain?: boolean;
  signal?: AbortSignal;
  onEvent?: (event: QuickstartEvent) => void;
  now?: () => Date;
};

export type QuickstartEvent =
  | { type: 'stage'; stage: string; status: 'start' | 'resume' | 'reused' | 'finish'; detail?: string }
  | { type: 'sft-event'; arm: QuickstartArm; event: SftEvent }
  | { type: 'rl-event'; event: RlEvent }
  | { type: 'rl-log'; line: string }
  | { type: 'eval-progress'; evaluation: string; progress: EvalProgress }
  | { type: 'eval-finish'; evaluation: string; summary: RunSummary };

/** Accuracy on the problems of one difficulty level. */
export type LevelResult = { level: number; problems: number; correct: number; accuracy: number };

export type QuickstartEvaluation = {
  /** `MODEL` on held-out arith, or `MODEL@rl-split` on the RL problems' held-out split. */
  name: string;
  model: QuickstartModel;
  modelDir: string;
  runDir: string;
  summary: RunSummary;
  levels: LevelResult[];
};

/** A stage's effect: `after` against `before` on the same problems (held-out arith, or the RL problems' split). */
export type QuickstartEffect = {
  before: QuickstartModel;
  after: QuickstartModel;
  on: 'held-out' | 'rl-split';
  effect: PairedDifference;
  sentence: string;
};

/** A stage's time: `wallMs` in this call (0 when reused), `recordedWallMs` of the session that finished it. */
export type StageTiming = {
  stage: QuickstartRecord['stages'][number]['stage'];
  status: 'ran' | 'resumed' | 'reused';
  wallMs: number;
  recordedWallMs: number | null;
};

export type QuickstartResult = {
  label: string;
  /** The model folder SFT started from (a new byte model: the tool run's init-model). */
  baseModel: string;
  outDir: string;
  /** On held-out arith, in the plan's order. */
  evaluations: QuickstartEvaluation[];
  /** The tool SFT model and the RL model on the RL problems' held-out split (empty without RL). */
  rlSplit: QuickstartEvaluation[];
  effects: QuickstartEffect[];
  stages: StageTiming[];
  reportPath: string;
  resultPath: string;
  wallMs: number;
  settings: QuickstartRecord['settings'];
};

/** Runs the whole quickstart; see the module header. */
export async function runQuickstart(options: QuickstartOptions): Promise<QuickstartResult> {
  const { plan, signal } = options;
  const now = options.now ?? (() => new Date());
  const started = now();
  const emit = options.onEvent ?? (() => {});
  const outDir = resolve(options.outDir);
  const stages: StageTiming[] = [];
  if (options.retrain) {
    for (const folder of ['eval', 'stages']) await rm(join(outDir, folder), { recursive: true, force: true });
    for (const folder of [QUICKSTART_FOLDERS.tool, QUICKSTART_FOLDERS.text, rlFolderName(plan)]) {
      await rm(join(plan.trainRoot, folder), { recursive: true, force: true });
    }
  }
  await mkdir(outDir, { recursive: true });
  const timed = async <T>(
    stage: StageTiming['stage'],
    work: () => Promise<{ value: T; status: StageTiming['status']; recordedWallMs?: number | null }>,
  ) => {
    const stageStarted = Date.now();
    const { value, status, recordedWallMs } = await work();
    const wallMs = status === 'reused' ? 0 : Date.now() - stageStarted;
    stages.push({
      stage,
      status,
      wallMs,
      recordedWallMs: recordedWallMs ?? (status === 'reused' ? null : wallMs),
    });
    return value;
  };

  const base = await timed(plan.source.type === 'pullable' ? 'pull' : 'model', () => startingModel(options));
  signal?.throwIfAborted();

  const heldOut = arithBenchmark(plan.evaluation.count === null ? {} : { count: plan.evaluation.count });
  const levelOf = new Map(heldOut.map((item) => [item.id, item.level]));
  const heldOutProblems = heldOut.map(({ id, problem, answer }) => ({ id, problem, answer }));
  const rlSplitProblems =
    plan.rlHeldOut === null || plan.rl === null
      ? []
      : arithEvalProblems({ count: plan.rlHeldOut.count, levels: plan.rlHeldOut.levels }).map(
          ({ id, problem, answer, level }) => {
            levelOf.set(id, level);
            return { id, problem, answer };
          },
        );

  // The evaluation slots: each one's stage runs when its model is ready.
  const sandbox = createLocalSandbox({
    maxWorkers: 2 * plan.evaluation.concurrency,
    warmWorkers: 4,
    ...(plan.sandboxPreload === null ? {} : { preload: plan.sandboxPreload }),
  });
  try {
    const evaluate = (
      name: EvaluationStage,
      model: QuickstartModel,
      modelDir: string,
      made: string,
      problems: readonly BenchmarkProblem[],
    ) =>
      timed(`eval-${name}` as StageTiming['stage'], () =>
        evaluationStage({ options, outDir, name, modelDir, made, problems, sandbox, emit }).then(
          async (stage) => ({
            ...stage,
            value: {
              name,
              model,
              modelDir,
              runDir: stage.value.runDir,
              summary: stage.value.summary,
              levels: await levelResults(stage.value.runDir, levelOf),
            } satisfies QuickstartEvaluation,
          }),
        ),
      );

    const baseline =
      plan.baseline && base.dir !== null
        ? [() => evaluate('baseline', 'baseline', base.dir as string, base.made, heldOutProblems)]
        : [];
    const arms = plan.arms.map((arm) => ({
      arm,
      ready: null as Promise<{ dir: string; made: string }> | null,
    }));
    const trainArm = (arm: QuickstartArm) =>
      timed(ARM_MODEL[arm], () => sftStage({ options, arm, base: base.dir, emit }));
    const trainRl = async (tool: { dir: string; made: string }) =>
      plan.rl === null ? null : timed('rl', () => rlStage({ options, from: tool, emit }));

    const evaluations: Promise<QuickstartEvaluation>[] = [];
    const rlSplit: Promise<QuickstartEvaluation>[] = [];
    // Every evaluation is awaited at the end; one that fails while others (or RL) still run
    // is not an unhandled rejection meanwhile.
    const tracked = (evaluation: Promise<QuickstartEvaluation>) => {
      evaluation.catch(() => {});
      return evaluation;
    };
    if (plan.parallel) {
      for (const slot of arms) slot.ready = trainArm(slot.arm);
      const tool = arms.find((slot) => slot.arm === 'tool')?.ready ?? null;
      const rl = tool === null ? Promise.resolve(null) : tool.then(trainRl);
      // Awaited below; a failure before then (the tool arm's, which RL shares) is not unhandled.
      rl.catch(() => {});
      // The arms' evaluations start when every arm is trained (the last arm's core is free
      // again, beside RL on the other); RL's evaluations when RL is done. Nothing is left
      // running behind a failure or a stop: what was started ends (and records what it
      // finished) first.
      const settled = async <T>(work: Promise<T>): Promise<T> => {
        const value = await work.catch(async (error: unknown) => {
          await Promise.allSettled([rl, ...evaluations, ...rlSplit]);
          throw error;
        });
        if (signal?.aborted) {
          await Promise.allSettled([rl, ...evaluations, ...rlSplit]);
          signal.throwIfAborted();
        }
        return value;
      };
      const trained = await settled(Promise.all(arms.map((slot) => slot.ready)));
      for (const run of baseline) evaluations.push(tracked(run()));
      trained.forEach((model, index) => {
        const arm = arms[index]?.arm as QuickstartArm;
        if (model !== null)
          evaluations.push(
            tracked(evaluate(ARM_MODEL[arm], ARM_MODEL[arm], model.dir, model.made, heldOutProblems)),
          );
      });
      const toolModel = trained[arms.findIndex((slot) => slot.arm === 'tool')] ?? null;
      if (toolModel !== null && rlSplitProblems.length > 0)
        rlSplit.push(
          tracked(evaluate('sft@rl-split', 'sft', toolModel.dir, toolModel.made, rlSplitProblems)),
        );
      const rlModel = await settled(rl);
      if (rlModel !== null && toolModel !== null) {
        evaluations.push(tracked(evaluate('rl', 'rl', rlModel.dir, rlModel.made, heldOutProblems)));
        if (rlSplitProblems.length > 0)
          rlSplit.push(tracked(evaluate('rl@rl-split', 'rl', rlModel.dir, rlModel.made, rlSplitProblems)));
      }
    } else {
      for (const run of baseline) evaluations.push(Promise.resolve(await run()));
      let toolModel: { dir: string; made: string } | null = null;
      for (const slot of arms) {
        const model = await trainArm(slot.arm);
        if (slot.arm === 'tool') toolModel = model;
        evaluations.push(
          Promise.resolve(
            await evaluate(ARM_MODEL[slot.arm], ARM_MODEL[slot.arm], model.dir, model.made, heldOutProblems),
          ),
        );
      }
      const rlModel = toolModel === null ? null : await trainRl(toolModel);
      if (rlModel !== null && toolModel !== null) {
        evaluations.push(
          Promise.resolve(await evaluate('rl', 'rl', rlModel.dir, rlModel.made, heldOutProblems)),
        );
        if (rlSplitProblems.length > 0) {
          rlSplit.push(
            Promise.resolve(
              await evaluate('sft@rl-split', 'sft', toolModel.dir, toolModel.made, rlSplitProblems),
            ),
          );
          rlSplit.push(
            Promise.resolve(await evaluate('rl@rl-split', 'rl', rlModel.dir, rlModel.made, rlSplitProblems)),
          );
        }
      }
    }
    const heldOutResults = await Promise.all(evaluations);
    const rlSplitResults = await Promise.all(rlSplit);
    signal?.throwIfAborted();
    const effects = await stageEffects(heldOutResults, rlSplitResults, plan);
    const reportPath = await writeReport({
      outDir,
      plan,
      evaluations: heldOutResults,
      rlSplit: rlSplitResults,
      effects,
      sandbox,
    });
    const result: QuickstartResult = {
      label: plan.label,
      baseModel: base.dir ?? join(plan.trainRoot, QUICKSTART_FOLDERS.tool, INIT_MODEL_FOLDER),
      outDir,
      evaluations: heldOutResults,
      rlSplit: rlSplitResults,
      effects,
      stages,
      reportPath,
      resultPath: join(outDir, RESULT_FILE),
      wallMs: now().getTime() - started.getTime(),
      settings: {
        count: heldOutProblems.length,
        concurrency: plan.evaluation.concurrency,
        trainMinutes: plan.sft.maxMinutes ?? null,
        rlMinutes: plan.rl?.minutes ?? 0,
        maxTokens: plan.evaluation.maxTokens,
        maxToolCalls: plan.evaluation.maxToolCalls,
        trainProblems: resolveSftConfig(plan.sft).trainProblems,
        levels: resolveSftConfig(plan.sft).levels,
        levelWeights: resolveSftConfig(plan.sft).levelWeights,
        rlLevels: plan.rl?.config.levels ?? [],
      },
    };
    await writeFile(result.resultPath, `${JSON.stringify(quickstartRecord(result, now()), null, 2)}\n`);
    return result;
  } finally {
    await sandbox.close();
  }
}

/** `quickstart.json`: the result without the summaries' per-problem lists. */
function quickstartRecord(result: QuickstartResult, finishedAt: Date): QuickstartRecord {
  const brief = ({ summary, ...evaluation }: QuickstartEvaluation) => ({
    ...evaluation,
    problems: summary.problems,
    accuracy: summary.avgAtK,
    codeCallsPerTrajectory: summary.toolUse.codeCallsPerTrajectory,
    meanResponseLength: summary.length.mean,
  });
  return {
    ...result,
    evaluations: result.evaluations.map(brief),
    rlSplit: result.rlSplit.map(brief),
    finishedAt: finishedAt.toISOString(),
  };
}

/** The starting model: pulled once (as `model pull`), a folder as it is, or none (each SFT run makes its own). */
async function startingModel(
  options: QuickstartOptions,
): Promise<{ value: { dir: string | null; made: string }; status: StageTiming['status'] }> {
  const { source } = options.plan;
  if (source.type === 'new-byte-model')
    return { value: { dir: null, made: 'new-byte-model' }, status: 'reused' };
  if (source.type === 'folder') {
    const dir = resolve(source.dir);
    options.onEvent?.({ type: 'stage', stage: 'model', status: 'reused', detail: dir });
    return { value: { dir, made: dir }, status: 'reused' };
  }
  options.onEvent?.({ type: 'stage', stage: 'pull', status: 'start', detail: source.name });
  const pulled = await pullModel({ name: source.name, out: pulledModelFolder(source.name, options.root) });
  options.onEvent?.({
    type: 'stage',
    stage: 'model',
    status: pulled.status === 'cached' ? 'reused' : 'finish',
    detail: pulled.out,
  });
  return {
    value: { dir: pulled.out, made: pulled.out },
    status: pulled.status === 'cached' ? 'reused' : 'ran',
  };
}

/**
 * One SFT arm: a finished run of the same configuration is reused, an interrupted one resumed,
 * anything else trained afresh (a folder of the old byte layout is renamed `<name>.old` first).
 * Its model and, as what later stages were made from, its report's creation time.
 */
async function sftStage({
  options,
  arm,
  base,
  emit,
}: {
  options: QuickstartOptions;
  arm: QuickstartArm;
  base: string | null;
  emit: (event: QuickstartEvent) => void;
}): Promise<{
  value: { dir: string; made: string };
  status: StageTiming['status'];
  recordedWallMs?: number | null;
}> {
  const { plan, signal } = options;
  const dir = join(plan.trainRoot, QUICKSTART_FOLDERS[arm]);
  const stage = ARM_MODEL[arm];
  const config = resolveSftConfig(
    { ...plan.sft, model: base, style: arm, dialect: plan.dialect, prompt: plan.prompt },
    `quickstart SFT (${arm})`,
  );
  await setAsideOldLayout(dir, emit, stage);
  if (existsSync(join(dir, TRAINING_REPORT_FILE))) {
    const report = await readTrainingReport(dir).catch(() => null);
    if (report !== null && sameSftRun(report.config, config)) {
      emit({ type: 'stage', stage, status: 'reused', detail: dir });
      return {
        value: { dir: join(dir, SFT_MODEL_FOLDER), made: report.createdAt },
        status: 'reused',
        recordedWallMs: report.totalWallMs,
      };
    }
    throw new AgentMathError(
      'QUICKSTART_RUN_DIFFERS',
      `${dir} holds an SFT run of another configuration; run the quickstart with --retrain to train it again`,
    );
  }
  const resume = existsSync(join(dir, 'config.json'));
  emit({ type: 'stage', stage, status: resume ? 'resume' : 'start', detail: dir });
  const result = await runSft({
    out: dir,
    config,
    resume,
    onEvent: (event) => emit({ type: 'sft-event', arm, event }),
    ...(signal === undefined ? {} : { signal }),
  });
  if (result.status === 'stopped') {
    signal?.throwIfAborted();
    throw new AgentMathError('QUICKSTART_SFT_STOPPED', `${dir}: training stopped at step ${result.step}`);
  }
  emit({ type: 'stage', stage, status: 'finish', detail: dir });
  return { value: { dir: result.model, made: result.report.createdAt }, status: resume ? 'resumed' : 'ran' };
}

/** Whether a finished run's resolved configuration is the one asked for (the fields asked for). */
function sameSftRun(saved: Record<string, unknown>, asked: Record<string, unknown>): boolean {
  const sizing = new Set(['steps', 'maxMinutes', 'threads', 'sequenceParallel', 'cpuOffload']);
  return Object.entries(asked).every(
    ([field, value]) =>
      // levelWeights null is asked for (one problem per level each turn), not left open.
      (field === 'levelWeights'
        ? JSON.stringify(saved[field] ?? null) === JSON.stringify(value)
        : value === null) ||
      sizing.has(field) ||
      field === 'model' ||
      JSON.stringify(saved[field]) === JSON.stringify(value),
  );
}

/** A training folder of the byte worker's old layout (its `sft-state.json`): renamed aside, never deleted. */
async function setAsideOldLayout(
  dir: string,
  emit: (event: QuickstartEvent) => void,
  stage: string,
): Promise<void> {
  if (!existsSync(join(dir, 'sft-state.json')) && !existsSync(join(dir, 'pytorch_model.bin'))) return;
  let aside = `${dir}.old`;
  for (let index = 2; existsSync(aside); index++) aside = `${dir}.old-${index}`;
  await rename(dir, aside);
  emit({
    type: 'stage',
    stage,
    status: 'start',
    detail: `${dir} was trained by an older AgentMath (kept as ${aside}; \`agentmath model convert\` converts its model); training again`,
  });
}

/** RL from the tool model: reused when finished from the same model and configuration, else run or resumed. */
async function rlStage({
  options,
  from,
  emit,
}: {
  options: QuickstartOptions;
  from: { dir: string; made: string };
  emit: (event: QuickstartEvent) => void;
}): Promise<{
  value: { dir: string; made: string };
  status: StageTiming['status'];
  recordedWallMs?: number | null;
}> {
  const { plan, signal } = options;
  const rl = plan.rl as NonNullable<QuickstartPlan['rl']>;
  const folder = join(plan.trainRoot, rlFolderName(plan));
  const config = resolveRlConfig({
    ...rl.config,
    init: from.dir,
    prompt: plan.prompt,
    dialect: plan.dialect,
    ...(plan.sandboxPreload === null ? {} : { sandboxPreload: plan.sandboxPreload }),
  });
  const inputs = { made: from.made, config: rlDefiningConfig(config), minutes: rl.minutes };
  const done = join(folder, RL_DONE_FILE);
  const model = join(folder, 'model');
  await setAsideOldLayout(folder, emit, 'rl');
  if (existsSync(done) && existsSync(join(model, 'config.json'))) {
    const record = JSON.parse(await readFile(done, 'utf8')) as {
      inputs?: unknown;
      finishedAt: string;
      wallMs?: number;
    };
    if (JSON.stringify(record.inputs) === JSON.stringify(inputs)) {
      emit({ type: 'stage', stage: 'rl', status: 'reused', detail: folder });
      return {
        value: { dir: model, made: record.finishedAt },
        status: 'reused',
        recordedWallMs: record.wallMs ?? null,
      };
    }
  }
  // An unfinished run is continued only from the same tool model and configuration (its time
  // budget may differ); one of other inputs, or one that left no record of them, starts over.
  const startedFile = join(folder, RL_STARTED_FILE);
  const startedFrom = `${JSON.stringify({ made: inputs.made, config: inputs.config }, null, 2)}\n`;
  const resume =
    existsSync(join(folder, 'checkpoint.json')) &&
    !existsSync(done) &&
    existsSync(startedFile) &&
    (await readFile(startedFile, 'utf8')) === startedFrom;
  if (!resume) {
    await rm(folder, { recursive: true, force: true });
    await mkdir(folder, { recursive: true });
    await writeFile(startedFile, startedFrom);
  }
  emit({ type: 'stage', stage: 'rl', status: resume ? 'resume' : 'start', detail: folder });
  const started = Date.now();
  await runRl({
    folder,
    config,
    resume,
    minutes: rl.minutes,
    onEvent: (event) => emit({ type: 'rl-event', event }),
    log: (line) => emit({ type: 'rl-log', line }),
    ...(signal === undefined ? {} : { signal }),
  });
  signal?.throwIfAborted();
  if (!existsSync(join(model, 'config.json'))) {
    throw new AgentMathError(
      'QUICKSTART_RL_NO_MODEL',
      `${folder}: RL ended without a model (no step finished)`,
    );
  }
  const finishedAt = new Date().toISOString();
  await writeFile(done, `${JSON.stringify({ inputs, finishedAt, wallMs: Date.now() - started }, null, 2)}\n`);
  emit({ type: 'stage', stage: 'rl', status: 'finish', detail: folder });
  return { value: { dir: model, made: finishedAt }, status: resume ? 'resumed' : 'ran' };
}

/** One evaluation: reused when its record shows it finished on the same model and problems, else run or resumed. */
async function evaluationStage({
  options,
  outDir,
  name,
  modelDir,
  made,
  problems,
  sandbox,
  emit,
}: {
  options: QuickstartOptions;
  outDir: string;
  name: EvaluationStage;
  modelDir: string;
  made: string;
  problems: readonly BenchmarkProblem[];
  sandbox: SandboxProvider;
  emit: (event: QuickstartEvent) => void;
}): Promise<{
  value: { runDir: string; summary: RunSummary };
  status: StageTiming['status'];
  recordedWallMs?: number | null;
}> {
  const { plan, signal } = options;
  const stage = `eval-${name}`;
  const runDir = join(outDir, 'eval', name.replace('@', '-'));
  const summaryFile = join(runDir, 'summary.json');
  const inputs = {
    model: modelDir,
    made,
    problems: problems.map((problem) => problem.id),
    dialect: plan.dialect,
    prompt: plan.prompt,
    maxTokens: plan.evaluation.maxTokens,
    maxToolCalls: plan.evaluation.maxToolCalls,
  };
  const state = await readStageState(outDir, stage, inputs);
  if (state.status === 'finished' && existsSync(summaryFile)) {
    emit({ type: 'stage', stage, status: 'reused', detail: runDir });
    const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as RunSummary;
    return { value: { runDir, summary }, status: 'reused', recordedWallMs: state.record.wallMs };
  }
  const resume = state.status === 'interrupted' && existsSync(join(runDir, 'config.json'));
  if (!resume) await rm(runDir, { recursive: true, force: true });
  const started = new Date();
  await recordStageStart(outDir, stage, inputs, started);
  emit({
    type: 'stage',
    stage,
    status: resume ? 'resume' : 'start',
    detail: `${problems.length} problems → ${runDir}`,
  });
  const result = await evaluateOnArith({
    modelDir,
    runDir,
    problems,
    concurrency: plan.evaluation.concurrency,
    sandbox,
    dialect: plan.dialect,
    prompt: plan.prompt,
    ...(plan.evaluation.maxTokens === null ? {} : { maxTotalTokens: plan.evaluation.maxTokens }),
    maxToolCalls: plan.evaluation.maxToolCalls,
    resume,
    config: {
      command: plan.source.type === 'new-byte-model' ? 'quickstart' : 'quickstart --model',
      stage: name,
    },
    meta: { evaluation: name },
    ...(signal === undefined ? {} : { signal }),
    onProgress: (progress) => emit({ type: 'eval-progress', evaluation: name, progress }),
  });
  if (result.status === 'incomplete') {
    throw new AgentMathError(
      'QUICKSTART_EVAL_INCOMPLETE',
      `evaluation of ${modelDir}: ${result.failed} trajectories ended in an engine or sandbox error ` +
        `(${join(runDir, 'errors.jsonl')}); run the quickstart again to retry them`,
    );
  }
  const finished = new Date();
  await recordStageFinish(outDir, stage, inputs, {
    startedAt: started,
    now: finished,
    wallMs: finished.getTime() - started.getTime(),
  });
  emit({ type: 'eval-finish', evaluation: name, summary: result.summary });
  return { value: { runDir, summary: result.summary }, status: resume ? 'resumed' : 'ran' };
}

/** Each stage's effect: the paired differences of the evaluated models on the problems both graded. */
async function stageEffects(
  evaluations: readonly QuickstartEvaluation[],
  rlSplit: readonly QuickstartEvaluation[],
  plan: QuickstartPlan,
): Promise<QuickstartEffect[]> {
  const find = (list: readonly QuickstartEvaluation[], model: QuickstartModel) =>
    list.find((entry) => entry.model === model);
  const compare = async (
    before: QuickstartEvaluation | undefined,
    after: QuickstartEvaluation | undefined,
    comparison: string,
    change: string,
    on: 'held-out' | 'rl-split' = 'held-out',
  ): Promise<QuickstartEffect[]> => {
    if (before === undefined || after === undefined) return [];
    const effect = pairedDifference(await problemGrades(before.runDir), await problemGrades(after.runDir));
    return [
      {
        before: before.model,
        after: after.model,
        on,
        effect,
        sentence: describeEffect(effect, { comparison, change }),
      },
    ];
  };
  const split =
    plan.rlHeldOut === null
      ? ''
      : ` on ${rlSplit[0]?.summary.problems ?? 0} held-out level ${plan.rlHeldOut.levels.join(', ')} problems (the RL problems' split)`;
  return [
    ...(await compare(
      find(evaluations, 'baseline'),
      find(evaluations, 'sft'),
      'Tool SFT against the base model',
      'SFT',
    )),
    ...(await compare(
      find(rlSplit, 'sft'),
      find(rlSplit, 'rl'),
      `RL against the tool model it started from${split}`,
      'RL',
      'rl-split',
    )),
    ...(await compare(
      find(evaluations, 'sft'),
      find(evaluations, 'rl'),
      'RL against the tool model on held-out arith',
      'RL',
    )),
    ...(await compare(
      find(evaluations, 'baseline'),
      find(evaluations, 'rl'),
      'SFT + RL against the base model',
      'training',
    )),
  ];
}

/** report.html: the evaluation tables and charts, each stage's effect, and the RL run's curves. */
async function writeReport({
  outDir,
  plan,
  evaluations,
  rlSplit,
  effects,
  sandbox,
}: {
  outDir: string;
  plan: QuickstartPlan;
  evaluations: readonly QuickstartEvaluation[];
  rlSplit: readonly QuickstartEvaluation[];
  effects: readonly QuickstartEffect[];
  sandbox: SandboxProvider;
}): Promise<string> {
  const path = await writeRunReport(
    [...evaluations, ...rlSplit].map((evaluation) => evaluation.runDir),
    {
      equivalent: (left, right) => answersEquivalent(left, right, { sandbox }),
      outFile: join(outDir, 'report.html'),
    },
  );
  const sentences = effects.map(({ sentence }) => `<p>${escapeHtml(sentence)}</p>`).join('\n');
  const rlFolder = join(plan.trainRoot, rlFolderName(plan));
  const curves =
    plan.rl !== null && existsSync(rlFolder)
      ? `<h2>Agentic RL from the tool model</h2>${rlReportSections([await readRlRun(rlFolder, QUICKSTART_MODEL_LABELS.rl)])}`
      : '';
  const page = await readFile(path, 'utf8');
  await writeFile(
    path,
    page.replace('</body>', `<h2>Each stage's effect</h2>\n${sentences}\n${curves}\n</body>`),
  );
  return path;
}

/** Accuracy by difficulty level, from the graded trajectories of a run folder. */
async function levelResults(runDir: string, levelOf: ReadonlyMap<string, number>): Promise<LevelResult[]> {
  const byLevel = new Map<number, { problems: number; correct: number }>();
  for (const trajectory of await readRunTrajectories(runDir)) {
    const level = trajectory.problemId === null ? undefined : levelOf.get(trajectory.problemId);
    if (level === undefined) continue;
    const entry = byLevel.get(level) ?? { problems: 0, correct: 0 };
    entry.problems++;
    if (readGrade(trajectory)?.correct) entry.correct++;
    byLevel.set(level, entry);
  }
  return [...byLevel.entries()]
    .sort(([left], [right]) => left - right)
    .map(([level, { problems, correct }]) => ({
      level,
      problems,
      correct,
      accuracy: problems === 0 ? 0 : correct / problems,
    }));
}
