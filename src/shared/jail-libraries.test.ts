import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { jailLibrariesLine, readJailLibraries } from './jail-libraries.ts';

describe('readJailLibraries', () => {
  let root = '';
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** A virtual environment with the given distributions: [name, version, files]. */
  function environment(distributions: [string, string, Record<string, string>][]): string {
    root = mkdtempSync(join(tmpdir(), 'agentmath-venv-'));
    writeFileSync(join(root, 'pyvenv.cfg'), 'home = /usr/bin\nversion_info = 3.11.2\n');
    const site = join(root, 'lib', 'python3.11', 'site-packages');
    for (const [name, version, files] of distributions) {
      const folder = join(site, `${name.replace(/-/g, '_')}-${version}.dist-info`);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, 'METADATA'), `Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`);
      for (const [file, text] of Object.entries(files)) writeFileSync(join(folder, file), text);
    }
    mkdirSync(join(root, 'bin'));
    return join(root, 'bin', 'python');
  }

  it('reads names, versions and import names from the metadata, and leaves out the grader’s', () => {
    const python = environment([
      ['z3-solver', '5.4.0.0', { 'top_level.txt': 'z3\n' }],
      ['python-flint', '0.9.0', { RECORD: 'flint/__init__.py,sha256=x,1\nflint/types.py,sha256=y,2\n' }],
      ['sympy', '1.14.0', { 'top_level.txt': 'isympy\nsympy\n' }],
      ['math-verify', '0.9.0', { 'top_level.txt': 'math_verify\n' }],
      ['latex2sympy2_extended', '1.11.0', { 'top_level.txt': 'latex2sympy2_extended\n' }],
    ]);
    const found = readJailLibraries(python);
    expect(found).toEqual({
      python: '3.11.2',
      libraries: [
        { name: 'python-flint', version: '0.9.0', importName: 'flint' },
        { name: 'sympy', version: '1.14.0', importName: 'sympy' },
        { name: 'z3-solver', version: '5.4.0.0', importName: 'z3' },
      ],
    });
    expect(jailLibrariesLine(found)).toBe(
      'The interpreter is Python 3.11.2 with python-flint 0.9.0 (import flint), sympy 1.14.0, z3-solver 5.4.0.0 (import z3).',
    );
  });

  it('knows nothing about an interpreter outside a virtual environment', () => {
    root = mkdtempSync(join(tmpdir(), 'agentmath-venv-'));
    const found = readJailLibraries(join(root, 'bin', 'python3'));
    expect(found).toEqual({ python: null, libraries: [] });
    expect(jailLibrariesLine(found)).toBeNull();
  });
});
