/**
 * What the sandbox's Python environment offers model-written code, read from the environment
 * itself: its Python version (`pyvenv.cfg`) and every installed distribution's name, version
 * (`*.dist-info/METADATA`) and import name (`top_level.txt`, else the packages in `RECORD`).
 * Read once per process, from files only (no interpreter is started). It does not say whether a
 * library imports; `agentmath check` does that by importing each one.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { jailPython } from './python-environments.ts';

export type JailLibrary = {
  /** The distribution's name as published (`python-flint`). */
  name: string;
  version: string;
  /** The module to import (`flint`). */
  importName: string;
};

export type JailLibraries = { python: string | null; libraries: JailLibrary[] };

/**
 * Installed for the grader, not for model code: Math-Verify and the LaTeX parser it brings.
 * They stay importable; the tool prompt just does not offer them.
 */
const GRADER_DISTRIBUTIONS = new Set(['math-verify', 'latex2sympy2-extended', 'antlr4-python3-runtime']);

/** PEP 503 normalisation: `Python_Flint` → `python-flint`. */
const normalise = (name: string) => name.toLowerCase().replace(/[-_.]+/g, '-');

/** Reads the environment whose interpreter is `python` (`<env>/bin/python`); empty when it is not a venv. */
export function readJailLibraries(python: string): JailLibraries {
  const root = dirname(dirname(python));
  const config = join(root, 'pyvenv.cfg');
  const version = existsSync(config)
    ? (/^version(?:_info)?\s*=\s*(\S+)/m.exec(readFileSync(config, 'utf8'))?.[1] ?? null)
    : null;
  const lib = join(root, 'lib');
  const pythonFolder = existsSync(lib)
    ? readdirSync(lib).find((name) => /^python3\.\d+$/.test(name))
    : undefined;
  if (pythonFolder === undefined) return { python: version, libraries: [] };
  const sitePackages = join(lib, pythonFolder, 'site-packages');
  const libraries: JailLibrary[] = [];
  for (const folder of existsSync(sitePackages) ? readdirSync(sitePackages) : []) {
    if (!folder.endsWith('.dist-info')) continue;
    const library = readDistribution(join(sitePackages, folder));
    if (library !== null && !GRADER_DISTRIBUTIONS.has(normalise(library.name))) libraries.push(library);
  }
  libraries.sort((a, b) => normalise(a.name).localeCompare(normalise(b.name)));
  return { python: version, libraries };
}

function readDistribution(folder: string): JailLibrary | null {
  const metadataPath = join(folder, 'METADATA');
  if (!existsSync(metadataPath)) return null;
  const metadata = readFileSync(metadataPath, 'utf8');
  const name = /^Name:\s*(.+)$/m.exec(metadata)?.[1]?.trim();
  const version = /^Version:\s*(.+)$/m.exec(metadata)?.[1]?.trim();
  if (name === undefined || version === undefined) return null;
  return { name, version, importName: importNameOf(folder, name) };
}

/** The distribution's own module: the one named like it, else the first top-level package. */
function importNameOf(folder: string, name: string): string {
  const wanted = normalise(name).replace(/-/g, '_');
  const topLevel = join(folder, 'top_level.txt');
  let modules: string[] = [];
  if (existsSync(topLevel)) {
    modules = readFileSync(topLevel, 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean);
  } else if (existsSync(join(folder, 'RECORD'))) {
    const packages = new Set<string>();
    for (const line of readFileSync(join(folder, 'RECORD'), 'utf8').split('\n')) {
      const match = /^([A-Za-z_]\w*)\/__init__\.py,/.exec(line);
      if (match) packages.add(match[1]!);
    }
    modules = [...packages];
  }
  return modules.find((module) => module.toLowerCase() === wanted) ?? modules[0] ?? wanted;
}

let cached: JailLibraries | null = null;

/** The sandbox environment's libraries (`jailPython()`), read on the first call and kept. */
export function jailLibraries(): JailLibraries {
  cached ??= readJailLibraries(jailPython());
  return cached;
}

/**
 * One line for the tool prompt: `The interpreter is Python 3.11.2 with mpmath 1.3.0, …,
 * python-flint 0.9.0 (import flint), …`. Null when nothing is known.
 */
export function jailLibrariesLine({ python, libraries }: JailLibraries): string | null {
  if (libraries.length === 0) return null;
  const named = libraries.map(({ name, version, importName }) => {
    const differs = normalise(name).replace(/-/g, '_') !== importName.toLowerCase();
    return `${name} ${version}${differs ? ` (import ${importName})` : ''}`;
  });
  return `The interpreter is Python${python === null ? '' : ` ${python}`} with ${named.join(', ')}.`;
}
