/**
 * The SFT learning-rate schedule: linear warmup from 0 to the peak over `warmupSteps`, then
 * a half cosine from the peak down to `minRatio · peak` at `totalSteps`. A pure function of
 * the step, so a resumed run continues on the same curve.
 */

export type LearningRateSchedule = {
  peak: number;
  warmupSteps: number;
  totalSteps: number;
  /** The floor as a fraction of the peak (0.1 = decay to a tenth). */
  minRatio: number;
};

/** Learning rate of 0-based step `step`. */
export function learningRateAt(step: number, schedule: LearningRateSchedule): number {
  const { peak, warmupSteps, totalSteps, minRatio } = schedule;
  if (step < warmupSteps) return (peak * (step + 1)) / warmupSteps;
  const span = Math.max(1, totalSteps - warmupSteps);
  const progress = Math.min(1, (step - warmupSteps) / span);
  return peak * (minRatio + ((1 - minRatio) * (1 + Math.cos(Math.PI * progress))) / 2);
}
