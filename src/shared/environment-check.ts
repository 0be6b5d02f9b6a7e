/**
 * The environment doctor behind `agentmath check`: one probe per requirement, each returning
 * whether it passed, what was found, and how to fix it. Probes run real programs (Python,
 * bubblewrap); nothing is assumed from file names alone. Both locked Python environments
 * (`.venv` for the worker and trainer, `.venv-jail` for the sandbox) are probed with their versions.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';
import { jailLibraries } from './jail-libraries.ts';
import { jailPython, trainerPython } from './python-environments.ts';

const run = promisify(execFile);

export type CheckResult = {
  name: string;
  ok: boolean;
  /** Required checks decide the exit code; optional ones only inform. */
  required: boolean;
  detail: string;
  fix?: string;
};

const SETUP_FIX = 'run: bash scripts/setup.sh (it creates .venv and .venv-jail from uv.lock)';

/**
 * One locked environment and the packages it must import (module name → label, the label being
 * the distribution's name where the module's `__version__` is missing).
 */
type PythonEnvironment = {
  label: string;
  python: string;
  packages: Record<string, string>;
};

/**
 * The jail's packages: the ones the grader needs, and every library its environment offers
 * model code (read from the environment, as the tool prompt is), each imported by the probe.
 */
function jailPackages(): Record<string, string> {
  const packages: Record<string, string> = {
    sympy: 'SymPy',
    numpy: 'NumPy',
    scipy: 'SciPy',
    math_verify: 'Math-Verify',
  };
  for (const library of jailLibraries().libraries) packages[library.importName] ??= library.name;
  return packages;
}

const ENVIRONMENTS: PythonEnvironment[] = [
  {
    label: 'trainer',
    python: trainerPython(),
    packages: { torch: 'PyTorch', transformers: 'transformers', safetensors: 'safetensors', numpy: 'NumPy' },
  },
  {
    label: 'jail',
    python: jailPython(),
    packages: jailPackages(),
  },
];

/**
 * Prints the interpreter's version and each module's version (null when it does not import);
 * without `__version__`, the version of the distribution named by the label (`z3-solver`).
 */
function probeScript(packages: Record<string, string>): string {
  return `
import importlib, importlib.metadata, json, sys
found = {"python": sys.version.split()[0], "modules": {}}
for name, label in ${JSON.stringify(Object.entries(packages))}:
    try:
        module = importlib.import_module(name)
        version = getattr(module, "__version__", None)
        if version is None:
            try:
                version = importlib.metadata.version(label)
            except importlib.metadata.PackageNotFoundError:
                version = importlib.metadata.version(name.replace("_", "-"))
        found["modules"][name] = str(version)
    except Exception:
        found["modules"][name] = None
if found["modules"].get("torch"):
    import torch
    found["blas"] = "mkl" if torch.backends.mkl.is_available() else ("openblas" if "openblas" in torch.__config__.show().lower() else "other")
print(json.dumps(found))
`;
}

type PythonFacts = { python: string; modules: Record<string, string | null>; blas?: string };

function checkNode(): CheckResult {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  const ok = major > 22 || (major === 22 && minor >= 18);
  return {
    name: 'Node.js',
    ok,
    required: true,
    detail: `${process.version} (${process.execPath})`,
    ...(ok
      ? {}
      : { fix: 'run through npm scripts or bin/agentmath.js, which use Node 24 from node_modules' }),
  };
}

async function probePython(environment: PythonEnvironment): Promise<PythonFacts | string> {
  if (!existsSync(environment.python)) return `${environment.python} not found`;
  try {
    const { stdout } = await run(environment.python, ['-c', probeScript(environment.packages)], {
      timeout: 120_000,
    });
    return JSON.parse(stdout.trim()) as PythonFacts;
  } catch (error) {
    return `probe failed: ${(error as Error).message.split('\n')[0]}`;
  }
}

function pythonChecks(environment: PythonEnvironment, facts: PythonFacts | string): CheckResult[] {
  const name = `Python (${environment.label})`;
  if (typeof facts === 'string') return [{ name, ok: false, required: true, detail: facts, fix: SETUP_FIX }];
  const results: CheckResult[] = [
    { name, ok: true, required: true, detail: `${environment.python} ${facts.python}` },
  ];
  for (const [module, label] of Object.entries(environment.packages)) {
    const version = facts.modules[module] ?? null;
    results.push({
      name: `${label} (${environment.label})`,
      ok: version !== null,
      required: true,
      detail: version === null ? 'not importable' : version,
      ...(version === null ? { fix: SETUP_FIX } : {}),
    });
  }
  if (facts.blas !== undefined) {
    results.push({ name: 'PyTorch BLAS', ok: true, required: false, detail: facts.blas });
  }
  return results;
}

async function checkBubblewrap(): Promise<CheckResult> {
  const bwrap = ['/usr/bin/bwrap', '/bin/bwrap'].find((path) => existsSync(path));
  if (!bwrap) {
    return {
      name: 'bubblewrap jail',
      ok: false,
      required: true,
      detail: 'bwrap not found',
      fix: 'apt-get install -y bubblewrap',
    };
  }
  try {
    await run(
      bwrap,
      [
        '--unshare-all',
        '--die-with-parent',
        '--new-session',
        '--ro-bind',
        '/usr',
        '/usr',
        '--symlink',
        'usr/bin',
        '/bin',
        '--symlink',
        'usr/lib',
        '/lib',
        '--symlink',
        'usr/lib64',
        '/lib64',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--tmpfs',
        '/tmp',
        '/usr/bin/true',
      ],
      { timeout: 10_000 },
    );
    return {
      name: 'bubblewrap jail',
      ok: true,
      required: true,
      detail: `${bwrap} creates a jail (all namespaces unshared)`,
    };
  } catch (error) {
    return {
      name: 'bubblewrap jail',
      ok: false,
      required: true,
      detail: `cannot create a jail: ${((error as { stderr?: string }).stderr || (error as Error).message).trim().split('\n')[0]}`,
      fix: 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root',
    };
  }
}

function checkResources(): CheckResult[] {
  const freeGiB = os.freemem() / 2 ** 30;
  const cores = os.availableParallelism();
  return [
    {
      name: 'memory',
      ok: freeGiB >= 2,
      required: true,
      detail: `${freeGiB.toFixed(1)} GiB free of ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
      ...(freeGiB >= 2 ? {} : { fix: 'free at least 2 GiB (the model worker and sandbox pool need it)' }),
    },
    { name: 'cores', ok: cores >= 1, required: true, detail: `${cores}` },
  ];
}

function checkChromium(): CheckResult {
  const path = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((candidate) => existsSync(candidate));
  return {
    name: 'Chromium (report checks)',
    ok: path !== undefined,
    required: false,
    detail: path ?? 'not found',
    ...(path ? {} : { fix: 'apt-get install -y chromium' }),
  };
}

/** Runs every probe; the two slow ones (Python, bubblewrap) in parallel. */
export async function checkEnvironment(): Promise<CheckResult[]> {
  const [bubblewrap, ...pythons] = await Promise.all([
    checkBubblewrap(),
    ...ENVIRONMENTS.map((environment) => probePython(environment)),
  ]);
  const pythonResults = ENVIRONMENTS.flatMap((environment, index) =>
    pythonChecks(environment, pythons[index] ?? 'not probed'),
  );
  return [checkNode(), ...pythonResults, bubblewrap, ...checkResources(), checkChromium()];
}
