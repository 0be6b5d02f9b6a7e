/**
 * One sentence on what a training stage changed: its paired difference against the model it
 * started from on the same problems (src/eval/paired-difference.ts), and whether that is a
 * measured gain, a measured loss, or within the noise.
 */
import { formatPairedDifference, type PairedDifference } from '../eval/paired-difference.ts';

/**
 * `"${comparison}: +1.5 points (95% interval …; McNemar p = 0.38); no gain measured: …."`;
 * `change` names what was done ("RL changed no answer").
 */
export function describeEffect(
  effect: PairedDifference,
  { comparison, change }: { comparison: string; change: string },
): string {
  const verdict = effect.gainMeasured
    ? 'a gain measured (McNemar p < 0.05)'
    : effect.gained === 0 && effect.lost === 0
      ? `no gain measured: ${change} changed no answer`
      : effect.difference < 0 && effect.pValue < 0.05
        ? 'a loss measured (McNemar p < 0.05)'
        : 'no gain measured: the difference is within the noise';
  return `${comparison}: ${formatPairedDifference(effect)}; ${verdict}.`;
}
