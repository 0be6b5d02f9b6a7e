/**
 * Benchmarks generated in code rather than read from a file. `arith` is the arithmetic task
 * family's fixed evaluation set (seeded, disjoint from its training split), which the
 * embedded model can be evaluated on without any data folder.
 */
import { arithBenchmark } from '../tasks/index.ts';
import type { BuiltinBenchmark } from './load-benchmark.ts';

export const BUILTIN_BENCHMARKS: readonly BuiltinBenchmark[] = [
  {
    name: 'arith',
    description: 'arithmetic task family, fixed evaluation set (200 problems, levels 1-4)',
    load: () => arithBenchmark(),
  },
];
