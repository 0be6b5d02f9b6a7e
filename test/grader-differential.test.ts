/**
 * The differential check against Math-Verify (`src/bench/grader-differential.ts`): thousands of
 * pairs generated from the benchmark reference answers, graded by our grader and by Math-Verify,
 * both in the real jailed sandbox. Fails below 97% agreement or above 0.5% false positives
 * (ours "correct" where Math-Verify says wrong), or when a rewriting kind with 20 pairs or more
 * agrees on less than 80% (a whole format the grader misses). Skipped, with the reason, only
 * when the jail's environment lacks math-verify (`bash scripts/setup.sh` installs it) or no
 * benchmark folder is found. Every disagreement it prints is classified in docs/grader.md.
 */
import { describe, expect, it } from 'vitest';
import { loadReferenceAnswers, runGraderDifferential } from '../src/bench/grader-differential.ts';
import { resolveDataDir } from '../src/eval/benchmark-data-dir.ts';
import { mathVerifySkipReason, useGraderTestSandbox } from './grader-sandbox.ts';

function skipReason(): string | null {
  const missing = mathVerifySkipReason();
  if (missing !== null) return missing;
  return resolveDataDir() === null ? 'no benchmark folder (set AGENTMATH_DATA_DIR)' : null;
}

const reason = skipReason();
if (reason !== null) process.stderr.write(`grader-differential: skipped: ${reason}\n`);

describe.skipIf(reason !== null)('our grader against Math-Verify on the generated corpus', () => {
  const sandboxOf = useGraderTestSandbox();

  it('agrees on ≥ 97% of thousands of pairs with ≤ 0.5% false positives, every format ≥ 80%', async () => {
    const references = loadReferenceAnswers(resolveDataDir()!);
    const report = await runGraderDifferential({ references, sandbox: sandboxOf() });
    process.stdout.write(
      `differential: agreement ${(100 * report.agreement).toFixed(2)}% of ${report.pairs}, ` +
        `false positives ${report.falsePositives}, false negatives ${report.falseNegatives}\n` +
        report.disagreements
          .map((item) => `  ${item.id}: ours ${item.ours.correct}, Math-Verify ${item.mathVerify.correct}\n`)
          .join(''),
    );
    expect(report.outages).toBe(0);
    expect(report.pairs).toBeGreaterThanOrEqual(2_000);
    expect(report.agreement).toBeGreaterThanOrEqual(0.97);
    expect(report.falsePositiveRate).toBeLessThanOrEqual(0.005);
    const weakKinds = report.byKind.filter(
      ({ pairs, agreements }) => pairs >= 20 && agreements / pairs < 0.8,
    );
    expect(weakKinds).toEqual([]);
  }, 600_000);
});
