/**
 * What a quickstart runs: one plan type for every model, read by one pipeline (quickstart.ts).
 * The stages are the same for the embedded byte model and a pretrained one — the model → a
 * baseline evaluation → tool SFT (and text SFT, the baseline arm) → RL from the tool model on
 * problems where SFT left room → evaluations → report — and the plan says how big each is and
 * which arms run:
 *   embedded    a new byte model trained from scratch (640 steps of SFT, both arms side by
 *               side on one core each), its models kept in `.agentmath/models/` (the default
 *               model of `solve` and `eval`); no baseline (a random-init model has nothing to
 *               measure); all 200 held-out problems;
 *   pretrained  a model `model pull` knows or a Hugging Face folder, fine-tuned for minutes,
 *               one stage after another (each uses every core), runs under the output folder.
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { PromptBuilderName } from '../agent/index.ts';
import { isHuggingFaceModelFolder, PULLABLE_MODEL_NAMES, type PullableModelName } from '../model/index.ts';
import type { DialectName } from '../protocol/index.ts';
import { RL_PRESETS, type RlConfigInput, type SftConfigInput } from '../train/index.ts';

export type QuickstartSource =
  | { type: 'new-byte-model' }
  | { type: 'pullable'; name: PullableModelName }
  | { type: 'folder'; dir: string };

export type QuickstartArm = 'tool' | 'text';

export type QuickstartPlan = {
  /** How the models are named in folders and reports (`embedded`, or the model's name). */
  label: string;
  source: QuickstartSource;
  /** Where the training runs go (`arith-tool`, `arith-text`, `arith-tool-rl` under it). */
  trainRoot: string;
  dialect: DialectName;
  prompt: PromptBuilderName;
  evaluation: {
    /** Held-out arith problems (the first N of the `arith` benchmark; null: all 200). */
    count: number | null;
    concurrency: number;
    /** Prompt + response tokens (null: the model's context length). */
    maxTokens: number | null;
    maxToolCalls: number;
  };
  /** Evaluate the starting model too. */
  baseline: boolean;
  /** The SFT arms: tool-augmented solutions, and text-only ones (the baseline arm). */
  arms: QuickstartArm[];
  /** The SFT runs' settings (both arms), beyond model, style, dialect and prompt. */
  sft: SftConfigInput;
  /** Arms, RL and evaluations side by side (one core each), or one stage after another. */
  parallel: boolean;
  /** RL from the tool model, sized by minutes; null: none. */
  rl: { minutes: number; config: Partial<RlConfigInput> } | null;
  /**
   * The RL problems' held-out split, where the tool SFT model and the RL model are compared
   * (problems never trained on: `arithEvalProblems`, disjoint from every training set).
   */
  rlHeldOut: { levels: number[]; count: number } | null;
  /**
   * Modules the sandbox workers of the evaluations and of RL import before a session (null: the
   * sandbox's default, SymPy, NumPy and SciPy). A worker serves one trajectory.
   */
  sandboxPreload: string[] | null;
};

export type QuickstartSizes = {
  count?: number;
  concurrency?: number;
  trainMinutes?: number;
  rlMinutes?: number;
  /** The RL stage's seed (its problem draws and sampling; default 0); the SFT models are shared. */
  rlSeed?: number;
};

/**
 * The levels every quickstart's RL trains on, the embedded model's and a pretrained one's:
 * level 5 (numbers in digit groups, so the first literal program fails), where SFT leaves room
 * (docs/rl.md; docs/results/quickstart.md and docs/real-model.md measure it).
 */
export const QUICKSTART_RL_LEVELS = [5];

/**
 * The SFT levels of every quickstart and their weights: levels 1–4 in full and the RL levels
 * thinly (one problem in 17 over whole turns of the levels; 16 of a pretrained plan's 400), so
 * the SFT model knows the level-5 moves (join digit groups with `_`, or read the SyntaxError
 * and fix the program) but does not master them: its greedy
 * accuracy on the level-5 split is well below its levels 1–4, and the RL stage has room to
 * show what it adds.
 */
export const QUICKSTART_SFT_LEVELS = [1, 2, 3, 4, ...QUICKSTART_RL_LEVELS];
export const QUICKSTART_SFT_LEVEL_WEIGHTS = [4, 4, 4, 4, ...QUICKSTART_RL_LEVELS.map(() => 1)];

/**
 * The embedded job's budget on two cores, for the whole job to fit 12 minutes: 640 SFT steps
 * of 8 sequences per arm, and 16 RL steps (at most 6 minutes) beside the text arm's training
 * and the arms' evaluations. 8 steps gained on the level-5 split with the interval above zero
 * in one seed of three, 12 steps in four runs of five (a fresh job read +8.8, interval −0.8 to
 * +17.9), 16 steps in each of three seeds (+11.3 to +17.5); the job had the minutes for them
 * (docs/results/quickstart.md).
 */
export const EMBEDDED_SFT_STEPS = 640;
export const EMBEDDED_RL_MINUTES = 6;
export const EMBEDDED_RL_STEPS = 16;

/** The embedded byte model's plan (`agentmath quickstart`). */
export function embeddedPlan(root: string, sizes: QuickstartSizes = {}): QuickstartPlan {
  return {
    label: 'embedded',
    source: { type: 'new-byte-model' },
    trainRoot: join(resolve(root), '.agentmath', 'models'),
    dialect: 'tags',
    prompt: 'problem-only',
    evaluation: {
      count: sizes.count ?? null,
      concurrency: sizes.concurrency ?? 32,
      maxTokens: null,
      maxToolCalls: 4,
    },
    baseline: false,
    arms: ['tool', 'text'],
    sft: {
      steps: EMBEDDED_SFT_STEPS,
      levels: QUICKSTART_SFT_LEVELS,
      levelWeights: QUICKSTART_SFT_LEVEL_WEIGHTS,
      // One core each: the two arms train side by side on the two cores.
      threads: 1,
      evalProblems: 0,
      ...(sizes.trainMinutes === undefined ? {} : { maxMinutes: sizes.trainMinutes }),
    },
    parallel: true,
    rl:
      (sizes.rlMinutes ?? EMBEDDED_RL_MINUTES) > 0
        ? {
            minutes: sizes.rlMinutes ?? EMBEDDED_RL_MINUTES,
            config: {
              // Equal work in every run (and seed): 16 steps, unless the minutes run out first.
              steps: EMBEDDED_RL_STEPS,
              batchSize: 4,
              groupSize: 8,
              levels: QUICKSTART_RL_LEVELS,
              reward: 'accuracy',
              // No learning rate here: train rl's own for a model of this size (2e-4 under 10 M
              // parameters; rl-learning-rate.ts). At 5e-4 a run of 8 steps lost 18 points.
              problemPool: 400,
              // Rollouts at T = 0.6, not 1: the job evaluates greedily, and at T = 1 this 0.8 M
              // model's samples are often degenerate text greedy decoding never writes, so much
              // of each step pushed down what greedy did not do. At 0.6 a group contrasts the
              // moves greedy makes (join the digit groups first or not, copy a number right or
              // not). Three seeds each, 8 steps: T = 1 read +0.0 / +6.3 / −2.5 on the level-5 split and
              // lost up to 5.5 points on levels 1–4; T = 0.6 +8.8 / +3.8 / +5.0 and at most 1.0
              // (docs/results/quickstart.md).
              temperature: 0.6,
              evalEvery: 0,
              evalProblems: 40,
              partialRollouts: 1,
              trainThreads: 1,
              seed: sizes.rlSeed ?? 0,
            },
          }
        : null,
    rlHeldOut: { levels: QUICKSTART_RL_LEVELS, count: 80 },
    // The byte model's programs import `math` and `fractions` only (its SFT data's and its
    // evaluations' imports): preloading SymPy, NumPy and SciPy cost each trajectory half a second
    // of a core for nothing, most of a tool evaluation's time on two busy cores
    // (docs/results/quickstart.md, "Time").
    sandboxPreload: [],
  };
}

/** The defaults of a pretrained model's plan, aimed at about 20 minutes on two quiet CPU cores. */
export const PRETRAINED_DEFAULTS = {
  count: 30,
  concurrency: 8,
  trainMinutes: 6,
  rlMinutes: 3,
} as const;

/** A pretrained model's plan (`agentmath quickstart --model NAME|DIR`). */
export function pretrainedPlan(
  source: Exclude<QuickstartSource, { type: 'new-byte-model' }>,
  outDir: string,
  sizes: QuickstartSizes = {},
): QuickstartPlan {
  const rlMinutes = sizes.rlMinutes ?? PRETRAINED_DEFAULTS.rlMinutes;
  return {
    label: quickstartModelLabel(source),
    source,
    trainRoot: join(resolve(outDir), 'train'),
    dialect: 'markdown',
    prompt: 'instructed',
    evaluation: {
      count: sizes.count ?? PRETRAINED_DEFAULTS.count,
      concurrency: sizes.concurrency ?? PRETRAINED_DEFAULTS.concurrency,
      maxTokens: RL_PRESETS.cpu.maxTokens,
      maxToolCalls: 4,
    },
    baseline: true,
    arms: ['tool'],
    sft: {
      steps: 1000,
      trainProblems: 400,
      // The embedded job's mix: RL's levels thinly, so the SFT model has room there.
      levels: [...QUICKSTART_SFT_LEVELS],
      levelWeights: [...QUICKSTART_SFT_LEVEL_WEIGHTS],
      // Short: the calibration steps of a time budget fall inside it, and the run is tens of steps.
      warmupSteps: 3,
      checkpointEvery: 10,
      maxSequenceTokens: 2048,
      seed: 0,
      evalProblems: 0,
      maxMinutes: sizes.trainMinutes ?? PRETRAINED_DEFAULTS.trainMinutes,
    },
    parallel: false,
    rl:
      rlMinutes > 0
        ? {
            minutes: rlMinutes,
            config: {
              ...RL_PRESETS.cpu,
              reward: 'accuracy',
              levels: [...QUICKSTART_RL_LEVELS],
              steps: 10_000,
              evalEvery: 0,
              // A step draws at most this many groups: one whose groups all come out right or all
              // wrong ends there instead of sampling through a pool of thousands.
              problemPool: 8,
              // One segment per trajectory: with partial rollout a short run's first step decides
              // no group (every trajectory is cut at context / 2 and parked) and trains nothing.
              partialRollouts: 1,
              // Not the size rule's 2.7e-6 at 135 M, whose two steps changed no answer: a run of a
              // few steps needs the rate SmolLM2's level-5 RL study measured, +15.5 and +13.5
              // points on 200 held-out problems in 3 and 4 steps, seeds 0 and 1 (docs/real-model.md).
              learningRate: 1e-5,
              seed: sizes.rlSeed ?? 0,
            },
          }
        : null,
    // The RL problems' held-out split, as many problems as the held-out arith evaluation.
    rlHeldOut: { levels: [...QUICKSTART_RL_LEVELS], count: sizes.count ?? PRETRAINED_DEFAULTS.count },
    // A pretrained model may write SymPy or NumPy code: workers keep them preloaded.
    sandboxPreload: null,
  };
}

/** What `--model` names: a model `model pull` knows, an existing model folder, or a refusal. */
export function resolveQuickstartModel(
  value: string,
): Exclude<QuickstartSource, { type: 'new-byte-model' }> | { type: 'refused'; message: string } {
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
      message: `--model ${value}: not a Hugging Face model folder (no config.json with a model_type)`,
    };
  }
  return { type: 'folder', dir };
}

/** The name the quickstart's default folder takes: `runs/quickstart-<label>`. */
export function quickstartModelLabel(source: Exclude<QuickstartSource, { type: 'new-byte-model' }>): string {
  return source.type === 'pullable' ? source.name : basename(resolve(source.dir));
}

/**
 * The RL model's folder under `trainRoot`: `arith-tool-rl` for seed 0 (the main job's), and
 * `arith-tool-rl-seed-N` for another seed, so a run of another seed never replaces it.
 */
export function rlFolderName(plan: Pick<QuickstartPlan, 'rl'>): string {
  const seed = plan.rl?.config.seed ?? 0;
  return seed === 0 ? 'arith-tool-rl' : `arith-tool-rl-seed-${seed}`;
}

/**
 * What the quickstart's parts took on this project's machine (2 cores, AMD EPYC Zen 4, nothing
 * else running; docs/results/quickstart.md has the runs): the basis of the time a quickstart
 * says to expect before it starts. Another machine, or another model than the one measured,
 * takes its own time.
 */
export const MEASURED_QUICKSTART_TIMES = {
  where: '2 CPU cores (AMD EPYC Zen 4), 2026-12-03',
  /** The embedded job from a fresh state with its defaults, all 200 problems (10 min 35 s). */
  embeddedMinutes: 10.6,
  /**
   * `quickstart --model smollm2-135m-instruct` with its defaults, per part: 15 min 22 s in all
   * (the model pulled before, the engine with its prefix cache; evaluations 145, 48, 51, 74 and
   * 51 s for 30 problems each, SFT 5 min 10 s of its 6, RL 4 min 4 s for its 3: a step runs to
   * its end).
   */
  pretrained: {
    model: 'smollm2-135m-instruct',
    /**
     * The rest of the measured run beyond SFT's and RL's budgets and the evaluations: RL's last
     * step runs past its budget (64 s), SFT stopped short of its own (50 s), the starts between.
     */
    overheadMinutes: 0.2,
    /** An evaluation's seconds per problem: the base model (it writes prose until the token budget), */
    baselineSecondsPerProblem: 4.8,
    /** the tool SFT or RL model on held-out arith, */
    toolSecondsPerProblem: 1.65,
    /** and on the RL problems' split (level 5). */
    splitSecondsPerProblem: 2.1,
  },
} as const;

/** The minutes a plan is expected to take on the measured machine, and what they are made of. */
export function expectedQuickstartTime(plan: QuickstartPlan): { minutes: number; parts: string } {
  const measured = MEASURED_QUICKSTART_TIMES;
  if (plan.source.type === 'new-byte-model') {
    return {
      minutes: measured.embeddedMinutes,
      parts: 'the whole job as measured with its defaults, all 200 problems',
    };
  }
  const per = measured.pretrained;
  const count = plan.evaluation.count ?? 200;
  const sftMinutes = plan.sft.maxMinutes ?? 0;
  const rlMinutes = plan.rl?.minutes ?? 0;
  const heldOutEvaluations =
    (plan.baseline ? count * per.baselineSecondsPerProblem : 0) +
    count * per.toolSecondsPerProblem * (plan.rl === null ? 1 : 2);
  const splitEvaluations =
    plan.rl === null || plan.rlHeldOut === null ? 0 : 2 * plan.rlHeldOut.count * per.splitSecondsPerProblem;
  const evaluationMinutes = (heldOutEvaluations + splitEvaluations) / 60;
  const minutes = per.overheadMinutes + sftMinutes + rlMinutes + evaluationMinutes;
  return {
    minutes,
    parts:
      `SFT ${sftMinutes} + RL ${rlMinutes} + evaluations ${evaluationMinutes.toFixed(1)} + the rest ` +
      `${per.overheadMinutes.toFixed(1)} minutes, as ${per.model}'s parts took, the model pulled before`,
  };
}
