/**
 * Resample-on-correct (rStar2-Agent's GRPO-RoC), pure: a group sampled K times its size is cut
 * back to its size before its advantages are taken. The share of right answers is kept (rounded,
 * and at least one of each kind when the oversampled group has both, so a mixed group stays
 * mixed); the right answers kept are those with the fewest tool errors and format faults, the
 * others are kept uniformly at random. A right answer reached through failing code therefore
 * loses its place to a clean one, with no reward term for it.
 *
 * Differences from the paper: it samples positives with probabilities from the error and format
 * rates; this takes the lowest penalty (tool calls that did not end `ok`, plus boxed answers
 * beyond the first) and breaks ties by `draw`. Members with a missing grade count with the
 * wrong ones (kept uniformly).
 */
import type { Trajectory } from '../trajectory/trajectory.ts';

export type ResampleMember = {
  correct: boolean | null;
  toolErrors: number;
  formatFaults: number;
  /** Uniform in [0, 1), fixed per member: the tie-break and the uniform choice. */
  draw: number;
};

export type ResampleReason = 'correct-more-faults' | 'uniform';

export type ResampleChoice = { keep: number[]; discarded: { index: number; reason: ResampleReason }[] };

/** Which members of an oversampled group to keep (indices in order); see the module comment. */
export function resampleOnCorrect(members: readonly ResampleMember[], groupSize: number): ResampleChoice {
  const all = members.map((_, index) => index);
  if (members.length <= groupSize) return { keep: all, discarded: [] };
  const positives = all.filter((index) => members[index]?.correct === true);
  const others = all.filter((index) => members[index]?.correct !== true);
  let keepPositives = Math.round((groupSize * positives.length) / members.length);
  if (positives.length > 0 && others.length > 0)
    keepPositives = Math.min(Math.max(keepPositives, 1), groupSize - 1);
  keepPositives = Math.min(keepPositives, positives.length, groupSize);
  let keepOthers = Math.min(groupSize - keepPositives, others.length);
  keepPositives = Math.min(groupSize - keepOthers, positives.length);
  keepOthers = Math.min(groupSize - keepPositives, others.length);
  const member = (index: number) => members[index] as ResampleMember;
  const penalty = (index: number) => member(index).toolErrors + member(index).formatFaults;
  const byPenalty = [...positives].sort((a, b) => penalty(a) - penalty(b) || member(a).draw - member(b).draw);
  const byDraw = [...others].sort((a, b) => member(a).draw - member(b).draw);
  const kept = new Set([...byPenalty.slice(0, keepPositives), ...byDraw.slice(0, keepOthers)]);
  return {
    keep: all.filter((index) => kept.has(index)),
    discarded: all
      .filter((index) => !kept.has(index))
      .map((index) => ({
        index,
        reason: member(index).correct === true ? ('correct-more-faults' as const) : ('uniform' as const),
      })),
  };
}

/** A finished trajectory's tool calls that did not end `ok`. */
export function toolErrorCount(trajectory: Trajectory): number {
  return trajectory.toolCalls.filter((call) => call.outcome.status !== 'ok').length;
}

/** Format faults: boxed answers beyond the first in the model's text. */
export function formatFaultCount(trajectory: Trajectory): number {
  let boxes = 0;
  for (const segment of trajectory.segments) {
    if (segment.kind === 'model') boxes += segment.text.split('\\boxed{').length - 1;
  }
  return Math.max(0, boxes - 1);
}

/** Uniform in [0, 1) from a string (FNV-1a, then a 32-bit mix): a fixed draw per member. */
export function stringDraw(text: string): number {
  let hash = 2166136261;
  for (let index = 0; index < text.length; index++) hash = Math.imul(hash ^ text.charCodeAt(index), 16777619);
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return (hash >>> 0) / 4294967296;
}
