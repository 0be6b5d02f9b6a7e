/**
 * The records data synthesis works on: one input problem with its text solution, and what
 * became of it (kept with its trajectory, or dropped at a stage for a stated reason).
 */
import type { Trajectory } from '../trajectory/trajectory.ts';

/** One input problem: its id, statement, text chain-of-thought and (when known) reference answer. */
export type SynthRecord = {
  id: string;
  problem: string;
  solution: string;
  answer: string | null;
};

/** The switchable refinement steps, in pipeline order. */
export const SYNTH_STAGES = [
  'decontaminate',
  'format',
  'executability',
  'alignment',
  'rationality',
  'answer',
  'self-correction',
] as const;
export type SynthStage = (typeof SYNTH_STAGES)[number];

/** Why a record did not make it into the output. */
export type SynthDrop = {
  stage: SynthStage | 'input' | 'rewrite';
  reason: string;
  /** Free-form evidence: matched n-grams, the failing code, the mismatching outputs. */
  detail?: unknown;
};

/** What became of one record; `notes` lists the repairs and rewrites applied to a kept one. */
export type SynthOutcome =
  | { status: 'kept'; id: string; trajectory: Trajectory; notes: string[]; teacherTokens: number }
  | { status: 'dropped'; id: string; drop: SynthDrop; teacherTokens: number };
