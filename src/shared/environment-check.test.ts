import { describe, expect, it } from 'vitest';
import { checkEnvironment } from './environment-check.ts';

describe('checkEnvironment', () => {
  it('reports every requirement with a detail, and a fix for each failure', async () => {
    const results = await checkEnvironment();
    const names = results.map((result) => result.name);
    for (const expected of [
      'Node.js',
      'Python (trainer)',
      'PyTorch (trainer)',
      'transformers (trainer)',
      'safetensors (trainer)',
      'Python (jail)',
      'SymPy (jail)',
      'NumPy (jail)',
      'SciPy (jail)',
      'Math-Verify (jail)',
      'python-flint (jail)',
      'z3-solver (jail)',
      'networkx (jail)',
      'mpmath (jail)',
      'bubblewrap jail',
    ]) {
      expect(names).toContain(expected);
    }
    for (const result of results) {
      expect(result.detail.length).toBeGreaterThan(0);
      if (!result.ok) expect(result.fix, result.name).toBeTruthy();
    }
  });

  it('passes on a machine set up by scripts/setup.sh', async () => {
    const failed = (await checkEnvironment()).filter((result) => result.required && !result.ok);
    expect(failed).toEqual([]);
  });
});
