/**
 * The quickstart on a pretrained Hugging Face model (`agentmath quickstart --model NAME|DIR`):
 * the real story, stage by stage — the model (a name `model pull` knows, pulled once and
 * cached; or a folder used as it is) → a baseline evaluation with the markdown tool prompt on
 * held-out arith → tool SFT on arith tool solutions in the markdown dialect (`tasks
 * write-arith`'s writer; `train sft --model`'s run, sized by minutes) → evaluation of the SFT
 * model → RL from it (`train rl --model` with the cpu preset and the accuracy reward, sized by
 * minutes) → evaluation of the RL model; then each stage's effect as the paired difference on
 * the same problems (SFT against the base model, RL against the SFT model, both against the
 * base model), one report, and `quickstart.json` with every stage's wall time.
 *
 * Stages run one after another: each one uses every core. Under `outDir`: `data/` (the SFT
 * data), `train/sft`, `train/rl` (run folders; `model/` in each is the trained model),
 * `eval/baseline`, `eval/sft`, `eval/rl` (eval run folders), `stages/` (stage-record.ts),
 * `report.html`, `quickstart.json`. A stage whose record shows it finished from the same inputs
 * is reused; one that was interrupted resumes (a training from its checkpoint, with the whole
 * time budget again; an evaluation from its trajectories); a stage built on one that ran again
 * starts afresh. `retrain` starts every stage afresh (the pulled model stays).
 * Not covered: several models side by side, text-only baselines, and sampling k > 1.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { escapeHtml } from '../eval/escape-html.ts';
import type { EvalProgress } from '../eval/eval-runner.ts';
import { type PairedDifference, pairedDifference } from '../eval/paired-difference.ts';
import { writeRunReport } from '../eval/run-report.ts';
import type { RunSummary } from '../eval/run-summary.ts';
import { answersEquivalent } from '../grader/index.ts';
import {
  isHuggingFaceModelFolder,
  PULLABLE_MODEL_NAMES,
  type PullableModelName,
  pulledModelFolder,
  pullModel,
} from '../model/index.ts';
import { getDialect } from '../protocol/index.ts';
import { createLocalSandbox } from '../sandbox/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { type ArithDatasetProgress, arithBenchmark, writeArithSftDataset } from '../tasks/index.ts';
import {
  defaultRlLearningRate,
  HF_SFT_LEARNING_RATE,
  type HfSftConfig,
  type HfSftEvent,
  RL_PRESETS,
  type RlConfigInput,
  type RlEvent,
  readRlRun,
  resolveRlConfig,
  rlDefiningConfig,
  rlReportSections,
  runHfSft,
  runRl,
  safetensorsParameterCount,
} from '../train/index.ts';
import { evaluateOnArith, problemGrades } from './arith-evaluation.ts';
import { describeEffect } from './effect-sentence.ts';
import type { QuickstartRecord } from './quickstart-record.ts';
import { readStageState, recordStageFinish, recordStageStart } from './stage-record.ts';

/**
 * The defaults, aimed at about 20 minutes in all on two quiet CPU cores: three evaluations of
 * 30 problems (about 3 minutes each, estimated from runs on a loaded machine), 6 minutes of SFT
 * (about 18 steps of 8 at ~20 s), 3 minutes of RL (one or two steps). docs/real-model.md has
 * what was measured.
 */
export const MODEL_QUICKSTART_DEFAULTS = {
  /** Held-out arith problems each model is evaluated on (the first N of the `arith` benchmark). */
  count: 30,
  concurrency: 8,
  trainMinutes: 6,
  rlMinutes: 3,
  /** Prompt + response tokens of a trajectory, in evaluation and in RL (the cpu preset's). */
  maxTokens: RL_PRESETS.cpu.maxTokens,
  maxToolCalls: 4,
  /** Tool solutions written for SFT (more than the steps that fit the minutes take). */
  trainProblems: 400,
  /** Levels of the SFT data and of the RL problems. */
  levels: [1, 2],
} as const;

/** The SFT run's settings; `maxMinutes` sizes it (the step count is only a ceiling). */
const SFT_DEFAULTS = {
  processes: 1,
  steps: 1000,
  batchSize: 8,
  learningRate: HF_SFT_LEARNING_RATE,
  // Short: the calibration steps of a time budget fall inside it, and the run is tens of steps.
  warmupSteps: 3,
  minLearningRateRatio: 0.1,
  checkpointEvery: 10,
  microBatchTokens: 8192,
  activationCheckpointing: false,
  sequenceParallel: 1,
  cpuOffload: false,
  maxSequenceTokens: 2048,
  prompt: 'instructed',
  dialect: 'markdown',
  seed: 0,
} as const satisfies Omit<HfSftConfig, 'model' | 'data' | 'maxMinutes'>;

/** The three evaluated models, in order. */
export type ModelQuickstartModel = 'baseline' | 'sft' | 'rl';
export type ModelQuickstartStage = 'pull' | 'data' | 'eval-baseline' | 'sft' | 'eval-sft' | 'rl' | 'eval-rl';

/** What `--model` names: a model `model pull` knows, or a Hugging Face folder. */
export type QuickstartModelChoice =
  | { type: 'pullable'; name: PullableModelName }
  | { type: 'folder'; dir: string }
  | { type: 'refused'; message: string };

/** Reads `--model`: a known name, an existing Hugging Face folder, or a refusal that says what to give. */
export function resolveQuickstartModel(value: string): QuickstartModelChoice {
  if ((PULLABLE_MODEL_NAMES as readonly string[]).includes(value)) {
    return { type: 'pullable', name: value as PullableModelName };
  }
  const dir = resolve(value);
  if (!existsSync(dir)) {
    return {
      type: 'refused',
      message:
        `--model ${value}: not a model the quickstart knows (${PULLABLE_MODEL_NAMES.join(', ')}) and no such folder; ` +
        'give one of those names or a Hugging Face model folder',
    };
  }
  if (!isHuggingFaceModelFolder(dir)) {
    return {
      type: 'refused',
      message:
        `--model ${value}: not a Hugging Face model folder (no config.json with a model_type, or the embedded ` +
        'byte model, whose quickstart is `agentmath quickstart` without --model)',
    };
  }
  return { type: 'folder', dir };
}

/** The name the quickstart's default folder takes: `runs/quickstart-<label>`. */
export function quickstartModelLabel(
  choice: { type: 'pullable'; name: string } | { type: 'folder'; dir: string },
): string {
  return choice.type === 'pullable' ? choice.name : basename(resolve(choice.dir));
}

export type ModelQuickstartOptions = {
  model: { type: 'pullable'; name: PullableModelName } | { type: 'folder'; dir: string };
  /** The project folder whose `.agentmath/models/` holds pulled models. */
  root: string;
  outDir: string;
  retrain?: boolean;
  count?: number;
  concurrency?: number;
  trainMinutes?: number;
  /** 0 skips RL. */
  rlMinutes?: number;
  maxTokens?: number;
  trainProblems?: number;
  /** Overrides of the SFT run's settings (tests use a few tiny steps). */
  sftConfig?: Partial<Omit<HfSftConfig, 'model' | 'data' | 'maxMinutes'>>;
  /** Overrides of the RL configuration (tests use one tiny step). */
  rlConfig?: Partial<RlConfigInput>;
  signal?: AbortSignal;
  onEvent?: (event: ModelQuickstartEvent) => void;
  now?: () => Date;
};

export type ModelQuickstartEvent =
  | { type: 'model-ready'; dir: string; how: 'pulled' | 'cached' | 'folder'; wallMs: number }
  | { type: 'stage-start'; stage: ModelQuickstartStage; resumed: boolean; dir: string }
  | { type: 'stage-reused'; stage: ModelQuickstartStage; dir: string; wallMs: number }
  | { type: 'stage-finish'; stage: ModelQuickstartStage; wallMs: number }
  | { type: 'data-progress'; progress: ArithDatasetProgress }
  | { type: 'sft-event'; event: HfSftEvent }
  | { type: 'rl-event'; event: RlEvent }
  | { type: 'rl-log'; line: string }
  | { type: 'eval-progress'; model: ModelQuickstartModel; progress: EvalProgress };

/** A stage's time: `wallMs` in this call (0 when reused), `recordedWallMs` of the session that finished it. */
export type StageTiming = {
  stage: ModelQuickstartStage;
  status: 'ran' | 'resumed' | 'reused';
  wallMs: number;
  recordedWallMs: number | null;
};

export type ModelQuickstartEvaluation = {
  model: ModelQuickstartModel;
  modelDir: string;
  runDir: string;
  summary: RunSummary;
};

export type ModelQuickstartEffect = {
  before: ModelQuickstartModel;
  after: ModelQuickstartModel;
  effect: PairedDifference;
  /** The printed sentence (describeEffect). */
  sentence: string;
};

export type ModelQuickstartResult = {
  label: string;
  baseModel: string;
  outDir: string;
  evaluations: ModelQuickstartEvaluation[];
  effects: ModelQuickstartEffect[];
  stages: StageTiming[];
  reportPath: string;
  /** `quickstart.json`: this result without the summaries' per-problem lists. */
  resultPath: string;
  wallMs: number;
};

const RESULT_FILE = 'quickstart.json';

/** Runs the whole quickstart on a pretrained model; see the module header. */
export async function runModelQuickstart(options: ModelQuickstartOptions): Promise<ModelQuickstartResult> {
  const now = options.now ?? (() => new Date());
  const started = now();
  const emit = options.onEvent ?? (() => {});
  const signal = options.signal;
  const outDir = resolve(options.outDir);
  const settings = {
    count: options.count ?? MODEL_QUICKSTART_DEFAULTS.count,
    concurrency: options.concurrency ?? MODEL_QUICKSTART_DEFAULTS.concurrency,
    trainMinutes: options.trainMinutes ?? MODEL_QUICKSTART_DEFAULTS.trainMinutes,
    rlMinutes: options.rlMinutes ?? MODEL_QUICKSTART_DEFAULTS.rlMinutes,
    maxTokens: options.maxTokens ?? MODEL_QUICKSTART_DEFAULTS.maxTokens,
    maxToolCalls: MODEL_QUICKSTART_DEFAULTS.maxToolCalls,
    trainProblems: options.trainProblems ?? MODEL_QUICKSTART_DEFAULTS.trainProblems,
    levels: [...MODEL_QUICKSTART_DEFAULTS.levels],
  };
  if (options.retrain) {
    for (const folder of ['data', 'train', 'eval', 'stages']) {
      await rm(join(outDir, folder), { recursive: true, force: true });
    }
  }
  await mkdir(outDir, { recursive: true });
  const stages: StageTiming[] = [];

  /** Reuses a finished stage, resumes an interrupted one, or runs it afresh; its finish time. */
  const stage = async (
    name: ModelQuickstartStage,
    dir: string,
    inputs: Record<string, unknown>,
    made: () => boolean,
    work: (resume: boolean) => Promise<void>,
  ): Promise<string> => {
    const state = await readStageState(outDir, name, inputs);
    if (state.status === 'finished' && made()) {
      emit({ type: 'stage-reused', stage: name, dir, wallMs: state.record.wallMs });
      stages.push({ stage: name, status: 'reused', wallMs: 0, recordedWallMs: state.record.wallMs });
      return state.record.finishedAt;
    }
    const resume = state.status === 'interrupted';
    if (!resume) await rm(dir, { recursive: true, force: true });
    const stageStarted = now();
    await recordStageStart(outDir, name, inputs, stageStarted);
    emit({ type: 'stage-start', stage: name, resumed: resume, dir });
    await work(resume);
    signal?.throwIfAborted();
    const wallMs = now().getTime() - stageStarted.getTime();
    const finishedAt = await recordStageFinish(outDir, name, inputs, {
      startedAt: stageStarted,
      now: now(),
      wallMs,
    });
    emit({ type: 'stage-finish', stage: name, wallMs });
    stages.push({ stage: name, status: resume ? 'resumed' : 'ran', wallMs, recordedWallMs: wallMs });
    return finishedAt;
  };

  // The model: pulled once (the same code as `model pull`), or a folder as it is.
  const pullStarted = now();
  let baseModel: string;
  if (options.model.type === 'pullable') {
    const pulled = await pullModel({
      name: options.model.name,
      out: pulledModelFolder(options.model.name, options.root),
    });
    baseModel = pulled.out;
    const wallMs = now().getTime() - pullStarted.getTime();
    emit({
      type: 'model-ready',
      dir: baseModel,
      how: pulled.status === 'cached' ? 'cached' : 'pulled',
      wallMs,
    });
    stages.push({
      stage: 'pull',
      status: pulled.status === 'cached' ? 'reused' : 'ran',
      wallMs,
      recordedWallMs: pulled.status === 'cached' ? null : wallMs,
    });
  } else {
    baseModel = resolve(options.model.dir);
    emit({ type: 'model-ready', dir: baseModel, how: 'folder', wallMs: 0 });
  }
  signal?.throwIfAborted();

  const problems = arithBenchmark({ count: settings.count }).map(({ id, problem, answer }) => ({
    id,
    problem,
    answer,
  }));
  const evaluationInputs = {
    count: settings.count,
    maxTokens: settings.maxTokens,
    maxToolCalls: settings.maxToolCalls,
    prompt: 'instructed',
    dialect: 'markdown',
  };
  const evaluations: ModelQuickstartEvaluation[] = [];
  const evaluate = async (model: ModelQuickstartModel, modelDir: string, made: string | null) => {
    const runDir = join(outDir, 'eval', model);
    const summaryFile = join(runDir, 'summary.json');
    await stage(
      `eval-${model}`,
      runDir,
      { ...evaluationInputs, model: modelDir, made },
      () => existsSync(summaryFile),
      async (resume) => {
        const resumeRun = resume && existsSync(join(runDir, 'config.json'));
        if (!resumeRun) await rm(runDir, { recursive: true, force: true });
        const sandbox = createLocalSandbox({ maxWorkers: settings.concurrency, warmWorkers: 2 });
        try {
          const result = await evaluateOnArith({
            modelDir,
            runDir,
            problems,
            concurrency: settings.concurrency,
            sandbox,
            dialect: 'markdown',
            prompt: 'instructed',
            maxTotalTokens: settings.maxTokens,
            maxToolCalls: settings.maxToolCalls,
            resume: resumeRun,
            config: { command: 'quickstart --model', stage: model },
            meta: { stage: model },
            ...(signal === undefined ? {} : { signal }),
            onProgress: (progress) => emit({ type: 'eval-progress', model, progress }),
          });
          if (result.status === 'incomplete') {
            throw new AgentMathError(
              'QUICKSTART_EVAL_INCOMPLETE',
              `evaluation of ${modelDir}: ${result.failed} trajectories ended in an engine or sandbox error ` +
                `(${join(runDir, 'errors.jsonl')}); run the quickstart again to retry them`,
            );
          }
        } finally {
          await sandbox.close();
        }
      },
    );
    const summary = JSON.parse(await readFile(summaryFile, 'utf8')) as RunSummary;
    evaluations.push({ model, modelDir, runDir, summary });
  };

  // The SFT data: tool solutions in the markdown dialect, code run in the jailed sandbox.
  const dataFile = join(outDir, 'data', 'arith-tool-markdown.jsonl');
  const dataMade = await stage(
    'data',
    join(outDir, 'data'),
    { count: settings.trainProblems, levels: settings.levels, dialect: 'markdown', seed: 0 },
    () => existsSync(dataFile),
    async () => {
      await mkdir(join(outDir, 'data'), { recursive: true });
      const sandbox = createLocalSandbox({ maxWorkers: 2, warmWorkers: 0, preload: [] });
      try {
        // The writer resumes a file by itself: an interrupted stage continues where it stopped.
        const summary = await writeArithSftDataset({
          out: dataFile,
          count: settings.trainProblems,
          seed: 0,
          levels: settings.levels,
          style: 'tool',
          sandbox,
          concurrency: 2,
          dialect: getDialect('markdown'),
          onProgress: (progress) => emit({ type: 'data-progress', progress }),
        });
        if (summary.resumed + summary.written === 0) {
          throw new AgentMathError('QUICKSTART_NO_DATA', `${dataFile}: no tool solution could be written`);
        }
      } finally {
        await sandbox.close();
      }
    },
  );

  await evaluate('baseline', baseModel, null);

  // Tool SFT from the base model, sized by minutes.
  const sftDir = join(outDir, 'train', 'sft');
  const sftModel = join(sftDir, 'model');
  const sftSettings = { ...SFT_DEFAULTS, ...options.sftConfig };
  const sftMade = await stage(
    'sft',
    sftDir,
    { model: baseModel, data: dataMade, config: sftSettings },
    () => existsSync(join(sftModel, 'config.json')),
    async (resume) => {
      const resumeRun = resume && existsSync(join(sftDir, 'config.json'));
      if (!resumeRun) await rm(sftDir, { recursive: true, force: true });
      const result = await runHfSft({
        out: sftDir,
        resume: resumeRun,
        config: { ...sftSettings, model: baseModel, data: dataFile, maxMinutes: settings.trainMinutes },
        onEvent: (event) => emit({ type: 'sft-event', event }),
        ...(signal === undefined ? {} : { signal }),
      });
      if (result.status === 'stopped') signal?.throwIfAborted();
    },
  );
  await evaluate('sft', sftModel, sftMade);

  // RL from the SFT model: the cpu preset, the accuracy reward, sized by minutes.
  if (settings.rlMinutes > 0) {
    const rlDir = join(outDir, 'train', 'rl');
    const rlModel = join(rlDir, 'model');
    const parameters = safetensorsParameterCount(sftModel);
    const config = resolveRlConfig({
      ...RL_PRESETS.cpu,
      init: sftModel,
      prompt: 'instructed',
      dialect: 'markdown',
      reward: 'accuracy',
      replicas: 1,
      trainerProcs: 1,
      levels: settings.levels,
      maxTokens: settings.maxTokens,
      maxToolCalls: settings.maxToolCalls,
      // The time budget ends the run; no held-out evaluation inside it (the quickstart evaluates).
      steps: 10_000,
      evalEvery: 0,
      // A step draws at most this many groups: one whose groups all come out right or all wrong
      // ends there instead of sampling through a pool of thousands (the budget is checked
      // between steps only).
      problemPool: 8,
      // One segment per trajectory: with partial rollout a short run's first step decides no
      // group (every trajectory is cut at context / 2 and parked) and trains nothing.
      partialRollouts: 1,
      ...(parameters === null ? {} : { learningRate: defaultRlLearningRate(parameters) }),
      ...options.rlConfig,
    });
    const rlMade = await stage(
      'rl',
      rlDir,
      { made: sftMade, config: rlDefiningConfig(config) },
      () => existsSync(join(rlModel, 'config.json')),
      async (resume) => {
        const resumeRun = resume && existsSync(join(rlDir, 'checkpoint.json'));
        if (!resumeRun) await rm(rlDir, { recursive: true, force: true });
        await runRl({
          folder: rlDir,
          config,
          resume: resumeRun,
          minutes: settings.rlMinutes,
          onEvent: (event) => emit({ type: 'rl-event', event }),
          log: (line) => emit({ type: 'rl-log', line }),
          ...(signal === undefined ? {} : { signal }),
        });
        signal?.throwIfAborted();
        if (!existsSync(join(rlModel, 'config.json'))) {
          throw new AgentMathError(
            'QUICKSTART_RL_NO_MODEL',
            `${rlDir}: RL ended without a model (no step finished)`,
          );
        }
      },
    );
    await evaluate('rl', rlModel, rlMade);
  }

  const effects = await stageEffects(evaluations);
  const reportPath = await writeReport(outDir, evaluations, effects, settings.rlMinutes > 0);
  const wallMs = now().getTime() - started.getTime();
  const result: ModelQuickstartResult = {
    label: quickstartModelLabel(options.model),
    baseModel,
    outDir,
    evaluations,
    effects,
    stages,
    reportPath,
    resultPath: join(outDir, RESULT_FILE),
    wallMs,
  };
  const record: QuickstartRecord = {
    ...result,
    settings,
    finishedAt: now().toISOString(),
    evaluations: evaluations.map(({ summary, ...evaluation }) => ({
      ...evaluation,
      problems: summary.problems,
      accuracy: summary.avgAtK,
      codeCallsPerTrajectory: summary.toolUse.codeCallsPerTrajectory,
      meanResponseLength: summary.length.mean,
    })),
  };
  await writeFile(result.resultPath, `${JSON.stringify(record, null, 2)}\n`);
  return result;
}

const EFFECT_SENTENCES: {
  before: ModelQuickstartModel;
  after: ModelQuickstartModel;
  comparison: string;
  change: string;
}[] = [
  { before: 'baseline', after: 'sft', comparison: 'Tool SFT against the base model', change: 'SFT' },
  { before: 'sft', after: 'rl', comparison: 'RL against the SFT model it started from', change: 'RL' },
  { before: 'baseline', after: 'rl', comparison: 'SFT + RL against the base model', change: 'training' },
];

/** The paired differences of the evaluated models, on the problems both graded. */
async function stageEffects(
  evaluations: readonly ModelQuickstartEvaluation[],
): Promise<ModelQuickstartEffect[]> {
  const grades = new Map<ModelQuickstartModel, Map<string, boolean>>();
  for (const evaluation of evaluations) grades.set(evaluation.model, await problemGrades(evaluation.runDir));
  const effects: ModelQuickstartEffect[] = [];
  for (const { before, after, comparison, change } of EFFECT_SENTENCES) {
    const beforeGrades = grades.get(before);
    const afterGrades = grades.get(after);
    if (beforeGrades === undefined || afterGrades === undefined) continue;
    const effect = pairedDifference(beforeGrades, afterGrades);
    effects.push({ before, after, effect, sentence: describeEffect(effect, { comparison, change }) });
  }
  return effects;
}

/** report.html: the evaluation table and charts, the effects, and the RL run's curves. */
async function writeReport(
  outDir: string,
  evaluations: readonly ModelQuickstartEvaluation[],
  effects: readonly ModelQuickstartEffect[],
  withRl: boolean,
): Promise<string> {
  // Only the report's answer comparisons need it; a small pool of its own.
  const sandbox = createLocalSandbox({ maxWorkers: 2, warmWorkers: 0 });
  try {
    const path = await writeRunReport(
      evaluations.map((evaluation) => evaluation.runDir),
      {
        equivalent: (left, right) => answersEquivalent(left, right, { sandbox }),
        outFile: join(outDir, 'report.html'),
      },
    );
    const sentences = effects.map(({ sentence }) => `<p>${escapeHtml(sentence)}</p>`).join('\n');
    const curves = withRl
      ? `<h2>Agentic RL from the SFT model</h2>${rlReportSections([await readRlRun(join(outDir, 'train', 'rl'), 'SFT + RL')])}`
      : '';
    const page = await readFile(path, 'utf8');
    await writeFile(
      path,
      page.replace('</body>', `<h2>Each stage's effect</h2>\n${sentences}\n${curves}\n</body>`),
    );
    return path;
  } finally {
    await sandbox.close();
  }
}
