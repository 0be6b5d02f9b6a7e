/**
 * The quickstart: one pipeline for every model (quickstart.ts) and the plans it runs
 * (quickstart-plan.ts): the embedded byte model, or a pretrained one.
 */

export { evaluateOnArith, problemGrades } from './arith-evaluation.ts';
export { describeEffect } from './effect-sentence.ts';
export {
  type LevelResult,
  QUICKSTART_FOLDERS,
  QUICKSTART_MODEL_LABELS,
  type QuickstartEffect,
  type QuickstartEvaluation,
  type QuickstartEvent,
  type QuickstartModel,
  type QuickstartOptions,
  type QuickstartResult,
  runQuickstart,
  type StageTiming,
} from './quickstart.ts';
export {
  EMBEDDED_RL_MINUTES,
  embeddedPlan,
  expectedQuickstartTime,
  MEASURED_QUICKSTART_TIMES,
  PRETRAINED_DEFAULTS,
  pretrainedPlan,
  QUICKSTART_RL_LEVELS,
  type QuickstartArm,
  type QuickstartPlan,
  type QuickstartSizes,
  type QuickstartSource,
  quickstartModelLabel,
  resolveQuickstartModel,
  rlFolderName,
} from './quickstart-plan.ts';
