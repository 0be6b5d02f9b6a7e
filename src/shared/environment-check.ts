/**
 * The environment doctor behind `agentmath check`: one probe per requirement, each returning
 * whether it passed, what was found, and how to fix it. Probes run real programs (Python,
 * bubblewrap); nothing is assumed from file names alone.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const SYSTEM_PYTHON = '/usr/bin/python3';

export type CheckResult = {
  name: string;
  ok: boolean;
  /** Required checks decide the exit code; optional ones only inform. */
  required: boolean;
  detail: string;
  fix?: string;
};

const APT_FIX =
  'run: bash scripts/setup.sh (or apt-get install -y python3-sympy python3-numpy python3-scipy python3-torch)';

const PYTHON_PROBE = `
import json, sys
found = {"python": sys.version.split()[0]}
for name in ("sympy", "numpy", "scipy", "torch"):
    try:
        module = __import__(name)
        found[name] = getattr(module, "__version__", "?")
    except Exception as error:
        found[name] = None
blas = None
if found.get("torch"):
    import torch
    a = torch.randn(256, 256)
    (a @ a).sum().item()
    with open("/proc/self/maps") as maps:
        libraries = {line.split()[-1] for line in maps if ".so" in line}
    names = sorted({l.rsplit("/", 1)[-1] for l in libraries if "blas" in l.lower() or "mkl" in l.lower()})
    blas = names
found["blas"] = blas
print(json.dumps(found))
`;

type PythonFacts = {
  python: string;
  sympy: string | null;
  numpy: string | null;
  scipy: string | null;
  torch: string | null;
  blas: string[] | null;
};

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

async function probePython(): Promise<PythonFacts | string> {
  if (!existsSync(SYSTEM_PYTHON)) return `${SYSTEM_PYTHON} not found`;
  try {
    const { stdout } = await run(SYSTEM_PYTHON, ['-c', PYTHON_PROBE], { timeout: 60_000 });
    return JSON.parse(stdout.trim()) as PythonFacts;
  } catch (error) {
    return `probe failed: ${(error as Error).message.split('\n')[0]}`;
  }
}

function pythonChecks(facts: PythonFacts | string): CheckResult[] {
  if (typeof facts === 'string') {
    return [
      { name: 'Python 3', ok: false, required: true, detail: facts, fix: 'apt-get install -y python3' },
    ];
  }
  const results: CheckResult[] = [
    { name: 'Python 3', ok: true, required: true, detail: `${SYSTEM_PYTHON} ${facts.python}` },
  ];
  for (const name of ['sympy', 'numpy', 'scipy', 'torch'] as const) {
    const version = facts[name];
    results.push({
      name: name === 'torch' ? 'PyTorch' : name === 'sympy' ? 'SymPy' : name === 'numpy' ? 'NumPy' : 'SciPy',
      ok: version !== null,
      required: true,
      detail: version === null ? 'not importable' : version,
      ...(version === null ? { fix: `apt-get install -y python3-${name}; or ${APT_FIX}` } : {}),
    });
  }
  const blas = facts.blas ?? [];
  const openblas = blas.some((library) => library.toLowerCase().includes('openblas'));
  results.push({
    name: 'PyTorch BLAS',
    ok: openblas,
    required: true,
    detail: blas.length > 0 ? `uses ${blas.join(', ')}` : 'no BLAS library loaded',
    ...(openblas
      ? {}
      : { fix: 'apt-get install -y libopenblas0-pthread (about 10x faster matrix products)' }),
  });
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
  const [python, bubblewrap] = await Promise.all([probePython(), checkBubblewrap()]);
  return [checkNode(), ...pythonChecks(python), bubblewrap, ...checkResources(), checkChromium()];
}
