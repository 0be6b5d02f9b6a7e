import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkDependencies, importCircles, reachable, violationsIn } from '../scripts/check-dependencies.ts';

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

  it('finds import circles, type-only imports included, and not a mere shared import', () => {
    const texts = new Map([
      ['train/a.ts', "import { b } from './b.ts';\nexport const a = 1;"],
      ['train/b.ts', "import type { C } from './c.ts';\nexport const b = 2;"],
      ['train/c.ts', "import type { A } from './a.ts';\nexport type C = number;"],
      ['train/d.ts', "import { a } from './a.ts';\nimport { b } from './b.ts';"],
    ]);
    expect(importCircles(texts)).toEqual([['train/a.ts', 'train/b.ts', 'train/c.ts', 'train/a.ts']]);
    texts.set('train/c.ts', 'export type C = number;');
    expect(importCircles(texts)).toEqual([]);
  });

  it('holds for the source tree', () => {
    expect(checkDependencies(resolve(import.meta.dirname, '../src'))).toEqual([]);
  });
});
