/**
 * `benchGrader`: the grader's speed figures. Fast path: grades per second on one core over
 * the corpus pairs that need no SymPy, with p50/p99 per grade, beside a baseline (plain
 * string equality after removing spaces) timed in the same run. Symbolic path: p50/p99 of
 * grades that reach the sandbox with a warm session, beside cold checks (a fresh session,
 * SymPy imported) timed in the same run.
 */
import { readFileSync } from 'node:fs';
import { gradeAnswer } from '../grader/grade-answer.ts';
import { SymbolicChecker } from '../grader/symbolic-checker.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import { percentile } from '../shared/percentile.ts';

type CorpusCase = { prediction: string; reference: string; correct: boolean; symbolic?: boolean };

export type GraderBenchOptions = {
  sandbox?: SandboxProvider;
  /** Passes over the fast-path pairs. */
  fastRounds?: number;
  /** Passes over the symbolic pairs (warm; SymPy's cache makes repeated passes faster). */
  symbolicRounds?: number;
  /** Cold symbolic checks (each opens and primes a session). */
  coldSamples?: number;
  now?: () => number;
};

export type GraderBenchReport = {
  fast: {
    pairs: number;
    grades: number;
    gradesPerSecond: number;
    p50Us: number;
    p99Us: number;
    baselineGradesPerSecond: number;
    /** Our grades/s over the baseline's. */
    ratio: number;
  };
  symbolic: {
    pairs: number;
    grades: number;
    p50Ms: number;
    p99Ms: number;
    coldSamples: number;
    coldP50Ms: number;
    /** Cold p50 over warm p50. */
    warmSpeedup: number;
  } | null;
};

/** The grader's own corpus (src/grader/grader-corpus.jsonl). */
export function loadGraderCorpus(): CorpusCase[] {
  return readFileSync(new URL('../grader/grader-corpus.jsonl', import.meta.url), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as CorpusCase);
}

export async function benchGrader(options: GraderBenchOptions = {}): Promise<GraderBenchReport> {
  const {
    sandbox,
    fastRounds = 50,
    symbolicRounds = 1,
    coldSamples = 3,
    now = () => performance.now(),
  } = options;
  const corpus = loadGraderCorpus();
  const fastPairs = corpus.filter((item) => !item.symbolic && item.prediction.length < 1_000);

  // Baseline: squeeze spaces and compare strings.
  let sink = 0;
  const baselineStart = now();
  for (let round = 0; round < fastRounds; round++) {
    for (const item of fastPairs) {
      if (item.prediction.replace(/\s+/g, '') === item.reference.replace(/\s+/g, '')) sink++;
    }
  }
  const baselineSeconds = (now() - baselineStart) / 1000;

  const latencies: number[] = [];
  const fastStart = now();
  for (let round = 0; round < fastRounds; round++) {
    for (const item of fastPairs) {
      const started = now();
      if ((await gradeAnswer(item.prediction, item.reference)).correct) sink++;
      latencies.push(now() - started);
    }
  }
  const fastSeconds = (now() - fastStart) / 1000;
  latencies.sort((a, b) => a - b);
  const grades = fastRounds * fastPairs.length;
  const gradesPerSecond = grades / fastSeconds;
  const baselineGradesPerSecond = grades / Math.max(baselineSeconds, 1e-9);
  const fast = {
    pairs: fastPairs.length,
    grades,
    gradesPerSecond,
    p50Us: percentile(latencies, 0.5) * 1000,
    p99Us: percentile(latencies, 0.99) * 1000,
    baselineGradesPerSecond,
    ratio: gradesPerSecond / baselineGradesPerSecond,
  };
  if (sink < 0) throw new Error('unreachable');
  if (sandbox === undefined) return { fast, symbolic: null };

  // Pairs the fast path cannot accept, but SymPy can: each grade reaches the sandbox.
  const symbolicPairs: CorpusCase[] = [];
  for (const item of corpus.filter((candidate) => candidate.symbolic && candidate.correct)) {
    if (!(await gradeAnswer(item.prediction, item.reference)).correct) symbolicPairs.push(item);
  }
  await gradeAnswer('\\sqrt{8}', '2\\sqrt{2}', { sandbox }); // warm the session
  const warm: number[] = [];
  for (let round = 0; round < symbolicRounds; round++) {
    for (const item of symbolicPairs) {
      const started = now();
      await gradeAnswer(item.prediction, item.reference, { sandbox, timeoutMs: 10_000 });
      warm.push(now() - started);
    }
  }
  warm.sort((a, b) => a - b);
  const cold: number[] = [];
  for (let sample = 0; sample < coldSamples; sample++) {
    const checker = new SymbolicChecker(sandbox);
    const started = now();
    await checker.check(
      { kind: 'expression', left: 'sqrt(Integer(8))', right: '(Integer(2)*sqrt(Integer(2)))', symbols: [] },
      60_000,
    );
    cold.push(now() - started);
    await checker.close();
  }
  cold.sort((a, b) => a - b);
  const p50Ms = percentile(warm, 0.5);
  return {
    fast,
    symbolic: {
      pairs: symbolicPairs.length,
      grades: warm.length,
      p50Ms,
      p99Ms: percentile(warm, 0.99),
      coldSamples: cold.length,
      coldP50Ms: percentile(cold, 0.5),
      warmSpeedup: percentile(cold, 0.5) / p50Ms,
    },
  };
}
