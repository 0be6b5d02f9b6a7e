/**
 * `benchGrader`: the grader's speed figures. Fast path: grades per second on one core over
 * the corpus pairs that need no SymPy, with p50/p99 per grade, beside a baseline (plain
 * string equality after removing spaces) timed in the same run. Symbolic path: p50/p99 of
 * grades that reach the sandbox with a warm session, beside cold checks (a fresh session,
 * SymPy imported) timed in the same run. Long responses: extraction time of 1 MB and 2 MB
 * responses of several shapes (a box at the end, free text with a number at the end, a megabyte
 * of unclosed boxes, a soup of `$` signs); a 2 MB / 1 MB ratio near 2 shows one linear pass.
 */
import { readFileSync } from 'node:fs';
import type { SandboxProvider } from '../sandbox/types.ts';
import { percentile } from '../shared/percentile.ts';
import { extractAnswer } from './extract-answer.ts';
import { gradeAnswer } from './grade-answer.ts';
import { SymbolicChecker } from './symbolic-checker.ts';

type CorpusCase = { prediction: string; reference: string; correct: boolean; symbolic?: boolean };

export type GraderBenchOptions = {
  sandbox?: SandboxProvider;
  /** Passes over the fast-path pairs. */
  fastRounds?: number;
  /** Passes over the symbolic pairs (warm; SymPy's cache makes repeated passes faster). */
  symbolicRounds?: number;
  /** Cold symbolic checks (each opens and primes a session). */
  coldSamples?: number;
  /** Timed extractions per long-response shape and size. */
  longRounds?: number;
  now?: () => number;
};

export type GraderBenchReport = {
  fast: {
    pairs: number;
    grades: number;
    gradesPerSecond: number;
    /**
     * Grades per second of this process's CPU time (user + system): the one-core rate, less
     * dependent on other jobs sharing the machine than the wall-clock rate.
     */
    gradesPerCpuSecond: number;
    p50Us: number;
    p99Us: number;
    baselineGradesPerSecond: number;
    /** Our grades/s over the baseline's. */
    ratio: number;
  };
  /** Extraction of long responses: p50 CPU ms per size, and the 2 MB / 1 MB ratio (2 = linear). */
  longResponses: { shape: string; p50Ms1Mb: number; p50Ms2Mb: number; ratio: number }[];
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
  return readFileSync(new URL('./grader-corpus.jsonl', import.meta.url), 'utf8')
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
    longRounds = 5,
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

  // One untimed pass first, so that both sides are measured compiled.
  for (const item of fastPairs) if ((await gradeAnswer(item.prediction, item.reference)).correct) sink++;
  const latencies: number[] = [];
  const cpuStart = process.cpuUsage();
  const fastStart = now();
  for (let round = 0; round < fastRounds; round++) {
    for (const item of fastPairs) {
      const started = now();
      if ((await gradeAnswer(item.prediction, item.reference)).correct) sink++;
      latencies.push(now() - started);
    }
  }
  const fastSeconds = (now() - fastStart) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  latencies.sort((a, b) => a - b);
  const grades = fastRounds * fastPairs.length;
  const gradesPerSecond = grades / fastSeconds;
  const baselineGradesPerSecond = grades / Math.max(baselineSeconds, 1e-9);
  const fast = {
    pairs: fastPairs.length,
    grades,
    gradesPerSecond,
    gradesPerCpuSecond: grades / Math.max(cpuSeconds, 1e-9),
    p50Us: percentile(latencies, 0.5) * 1000,
    p99Us: percentile(latencies, 0.99) * 1000,
    baselineGradesPerSecond,
    ratio: gradesPerSecond / baselineGradesPerSecond,
  };
  const longResponses = benchLongResponses(longRounds);
  if (sink < 0) throw new Error('unreachable');
  if (sandbox === undefined) return { fast, longResponses, symbolic: null };

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
    longResponses,
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

/** Responses of `bytes` characters in shapes that stress each extraction step. */
const LONG_SHAPES: [string, (bytes: number) => string][] = [
  ['box at the end', (bytes) => `${'We add the terms one by one. '.repeat(bytes / 29)}So \\boxed{42}.`],
  [
    'prose, number at the end',
    (bytes) => `${'The value $x_1$ grows, then 7 shrinks. '.repeat(bytes / 39)}It is 1,000.5€`,
  ],
  ['unclosed boxes', (bytes) => '\\boxed{'.repeat(bytes / 7)],
  ['unclosed math delimiters', (bytes) => '$ \\( \\[ $$ 1 '.repeat(bytes / 14)],
];

/** p50 CPU milliseconds (user + system) of extracting each shape at 1 MB and 2 MB. */
function benchLongResponses(rounds: number): GraderBenchReport['longResponses'] {
  const p50For = (text: string) => {
    const times: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const started = process.cpuUsage();
      extractAnswer(text);
      const cpu = process.cpuUsage(started);
      times.push((cpu.user + cpu.system) / 1000);
    }
    return percentile(
      times.sort((a, b) => a - b),
      0.5,
    );
  };
  return LONG_SHAPES.map(([shape, make]) => {
    const p50Ms1Mb = p50For(make(1_000_000));
    const p50Ms2Mb = p50For(make(2_000_000));
    return { shape, p50Ms1Mb, p50Ms2Mb, ratio: p50Ms2Mb / Math.max(p50Ms1Mb, 1e-6) };
  });
}
