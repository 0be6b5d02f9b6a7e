/** The synthesis module: text chain-of-thought to refined tool-augmented trajectories, and the ablation. */

export { buildDecontaminationIndex, DEFAULT_NGRAM, NgramIndex, wordNgrams } from '../eval/decontamination.ts';
export {
  type ArithNoise,
  arithRewrite,
  DEFAULT_ARITH_NOISE,
  startArithTeacherServer,
} from './arith-teacher.ts';
export { repairFormat } from './format-repair.ts';
export { OpenAiTeacher, retryAfterMs } from './openai-teacher.ts';
export {
  parseFieldMapping,
  readSynthInput,
  type SynthFieldMapping,
  SynthInputError,
} from './read-synth-input.ts';
export {
  ABLATION_ROWS,
  type AblationRow,
  PAPER_ABLATION,
  renderAblationTable,
  runAblation,
} from './synth-ablation.ts';
export { parseStages, resolveSynthConfig, type SynthConfig, type SynthConfigInput } from './synth-config.ts';
export type { SynthStats } from './synth-outputs.ts';
export { SYNTH_STAGES, type SynthOutcome, type SynthRecord, type SynthStage } from './synth-record.ts';
export { assertSynthFolder, runSynth, type SynthEvent, SynthRunFolderError } from './synth-run.ts';
export type { Teacher, TeacherAnswer, TeacherRequest, TeacherResult } from './teacher.ts';
