/** The grader: answer extraction, normalisation, equivalence rules and reward functions. */
export { type CompareContext, compareAnswers, type Decision } from './compare-answers.ts';
export { type Extraction, extractAnswer } from './extract-answer.ts';
export {
  answersEquivalent,
  DEFAULT_SYMBOLIC_TIMEOUT_MS,
  gradeAnswer,
  MAX_ANSWER_CHARS,
  prepareAnswer,
} from './grade-answer.ts';
export { type GradeLineResult, gradeLines } from './grade-lines.ts';
export { GRADER_NAMES, type GraderName, graderFor } from './grader-choice.ts';
export {
  DEFAULT_MATH_VERIFY_TIMEOUT_MS,
  gradeWithMathVerify,
  releaseMathVerifySessions,
} from './math-verify-grader.ts';
export { normalizeAnswer } from './normalize-answer.ts';
export { type Answer, parseAnswer } from './parse-answer.ts';
export {
  accuracyReward,
  type CompositeRewardConfig,
  compositeReward,
  compositeRewardConfigSchema,
  countExecutedCode,
  trajectoryReward,
} from './rewards.ts';
export { releaseSymbolicSessions, SymbolicChecker, symbolicCheckerFor } from './symbolic-checker.ts';
export type { SymbolicQuery, SymbolicVerdict } from './symbolic-query.ts';
export type { GradeOptions, GradeReason, GradeResult, Grader } from './types.ts';
