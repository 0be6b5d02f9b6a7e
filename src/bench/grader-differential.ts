/**
 * The differential check of our grader against Math-Verify: the corpus generated from the
 * benchmark reference answers (`generateDifferentialCorpus`, files read by path from the data
 * folder, never copied) graded by both, ours with the symbolic step and Math-Verify in the same
 * sandbox. Math-Verify's verdict is the oracle: a false positive is "correct" where it says
 * wrong, a false negative the reverse; a pair either grader could not judge (an outage) is
 * counted apart, in neither. Also times both graders over the corpus (grades per second).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type DifferentialPair,
  generateDifferentialCorpus,
  type ReferenceAnswer,
} from '../grader/differential-corpus.ts';
import { gradeAnswer } from '../grader/grade-answer.ts';
import { gradeWithMathVerify } from '../grader/math-verify-grader.ts';
import type { GradeResult } from '../grader/types.ts';
import type { SandboxProvider } from '../sandbox/types.ts';

export type Disagreement = {
  id: string;
  kind: string;
  prediction: string;
  reference: string;
  ours: { correct: boolean; reason: string; extracted: string | null };
  mathVerify: { correct: boolean; extracted: string | null };
};

export type DifferentialReport = {
  /** Pairs graded by both (outages excluded). */
  pairs: number;
  agreements: number;
  agreement: number;
  falsePositives: number;
  falseNegatives: number;
  /** Over `pairs`. */
  falsePositiveRate: number;
  falseNegativeRate: number;
  /** Pairs without a verdict from either grader. */
  outages: number;
  byKind: { kind: string; pairs: number; agreements: number }[];
  disagreements: Disagreement[];
  /** Wall-clock grades per second over the corpus, one grade at a time. */
  oursGradesPerSecond: number;
  mathVerifyGradesPerSecond: number;
};

/** Every `answer` of the `.jsonl` files in `directory`, with its `id`, in file-name order. */
export function loadReferenceAnswers(directory: string): ReferenceAnswer[] {
  return readdirSync(directory)
    .filter((name) => name.endsWith('.jsonl'))
    .sort()
    .flatMap((name) =>
      readFileSync(join(directory, name), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line, index) => {
          const { id, answer } = JSON.parse(line) as { id?: unknown; answer?: unknown };
          if (typeof answer !== 'string') {
            throw new Error(`benchmark file ${name} line ${index + 1}: missing field "answer"`);
          }
          return { id: typeof id === 'string' ? id : `${name}:${index + 1}`, answer };
        }),
    );
}

/** Grades every pair with `grade`, in order, and the wall-clock seconds it took. */
async function gradeAll(
  pairs: readonly DifferentialPair[],
  grade: (pair: DifferentialPair) => Promise<GradeResult>,
  now: () => number,
): Promise<{ results: GradeResult[]; seconds: number }> {
  const results: GradeResult[] = [];
  const started = now();
  for (const pair of pairs) results.push(await grade(pair));
  return { results, seconds: (now() - started) / 1000 };
}

/** Grades the corpus of `references` with both graders and compares them. */
export async function runGraderDifferential(options: {
  references: readonly ReferenceAnswer[];
  sandbox: SandboxProvider;
  now?: () => number;
}): Promise<DifferentialReport> {
  const { references, sandbox, now = () => performance.now() } = options;
  const pairs = generateDifferentialCorpus(references);
  // One untimed Math-Verify grade first, so its session's prelude is not in the rate.
  await gradeWithMathVerify('\\boxed{1}', '1', { sandbox });
  const ours = await gradeAll(
    pairs,
    (pair) => gradeAnswer(pair.prediction, pair.reference, { sandbox }),
    now,
  );
  const theirs = await gradeAll(
    pairs,
    (pair) => gradeWithMathVerify(pair.prediction, pair.reference, { sandbox }),
    now,
  );
  const kinds = new Map<string, { pairs: number; agreements: number }>();
  const disagreements: Disagreement[] = [];
  let graded = 0;
  let agreements = 0;
  let falsePositives = 0;
  let falseNegatives = 0;
  let outages = 0;
  pairs.forEach((pair, index) => {
    const our = ours.results[index]!;
    const their = theirs.results[index]!;
    if (our.correct === null || their.correct === null) {
      outages++;
      return;
    }
    graded++;
    const kind = kinds.get(pair.kind) ?? { pairs: 0, agreements: 0 };
    kinds.set(pair.kind, kind);
    kind.pairs++;
    if (our.correct === their.correct) {
      agreements++;
      kind.agreements++;
      return;
    }
    if (our.correct) falsePositives++;
    else falseNegatives++;
    disagreements.push({
      id: pair.id,
      kind: pair.kind,
      prediction: pair.prediction,
      reference: pair.reference,
      ours: { correct: our.correct, reason: our.reason, extracted: our.extracted },
      mathVerify: { correct: their.correct, extracted: their.extracted },
    });
  });
  const rate = (count: number) => (graded === 0 ? 0 : count / graded);
  return {
    pairs: graded,
    agreements,
    agreement: rate(agreements),
    falsePositives,
    falseNegatives,
    falsePositiveRate: rate(falsePositives),
    falseNegativeRate: rate(falseNegatives),
    outages,
    byKind: [...kinds].map(([kind, counts]) => ({ kind, ...counts })),
    disagreements,
    oursGradesPerSecond: pairs.length / Math.max(ours.seconds, 1e-9),
    mathVerifyGradesPerSecond: pairs.length / Math.max(theirs.seconds, 1e-9),
  };
}
