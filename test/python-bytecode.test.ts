/**
 * scripts/setup.sh leaves the Python environments that start a process per engine, trainer or
 * sandbox worker compiled to bytecode. Where PYTHONDONTWRITEBYTECODE is set (this project's CI
 * image) or Python runs with -B (the jail), no start writes any, so without it every engine or
 * trainer start compiled torch's and transformers' sources again (10-12 s an import, not 5-6 s).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function sitePackages(environment: string): string {
  const lib = join(root, environment, 'lib');
  const python = readdirSync(lib).find((name) => name.startsWith('python3'));
  if (python === undefined) throw new Error(`${lib}: no python3.* folder; run bash scripts/setup.sh`);
  return join(lib, python, 'site-packages');
}

function compiled(packageDir: string): boolean {
  const cache = join(packageDir, '__pycache__');
  return existsSync(cache) && readdirSync(cache).some((name) => /^__init__\.cpython-\d+\.pyc$/.test(name));
}

describe('the Python environments setup.sh installs', () => {
  it.each([
    ['.venv', ['torch', 'transformers', 'safetensors', 'numpy']],
    ['.venv-jail', ['sympy', 'numpy', 'scipy']],
  ])('%s holds bytecode for what its processes import at start', (environment, packages) => {
    const site = sitePackages(environment);
    for (const name of packages) expect(compiled(join(site, name)), `${environment}: ${name}`).toBe(true);
  });
});
