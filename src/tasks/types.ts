/**
 * Task families: problems with programmatically computed reference answers, and written
 * solutions as segments (model text, tool output) ready for SFT.
 */

export type TaskProblem = {
  id: string;
  family: string;
  /** Difficulty level: 1 = easiest of the defaults, 0 = the small-operand level asked for explicitly. */
  level: number;
  problem: string;
  answer: string;
};

/** `model` text is trained on (loss mask 1); `tool` text is interpreter output (mask 0). */
export type SolutionSegment = { kind: 'model' | 'tool'; text: string };

export type TaskSolution = {
  problem: TaskProblem;
  style: 'tool' | 'text';
  segments: SolutionSegment[];
};
