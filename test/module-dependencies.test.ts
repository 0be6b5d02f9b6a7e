import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDependencies, reachable, violationsIn } from '../scripts/check-dependencies.ts';

describe('module dependency rules', () => {
  it('flags a wrong-way import with its file and line', () => {
    const text = "import { x } from '../shared/x.ts';\nimport type { Y } from '../sandbox/types.ts';\n";
    expect(violationsIn('protocol/dialect.ts', text)).toEqual([
      {
        file: 'protocol/dialect.ts',
        line: 2,
        from: 'protocol',
        to: 'sandbox',
        specifier: '../sandbox/types.ts',
      },
    ]);
  });

  it('follows allowed edges transitively, and nothing imports cli', () => {
    expect(reachable('rollout').has('engine')).toBe(true);
    expect(reachable('eval').has('train')).toBe(false);
    expect(violationsIn('bench/x.ts', "import { a } from '../cli/main.ts';")).toHaveLength(1);
    expect(violationsIn('bench/x.ts', "import { a } from '../train/index.ts';")).toHaveLength(0);
  });

  it('holds for the source tree', () => {
    expect(checkDependencies(resolve(import.meta.dirname, '../src'))).toEqual([]);
  });
});
