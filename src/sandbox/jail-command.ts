/**
 * The command line that starts one runner inside a bubblewrap jail: every namespace unshared
 * (no network), a read-only view of the interpreter's system directories only, a private
 * size-capped /tmp, minimal /dev and /proc, no capabilities, a scrubbed environment, and a
 * distinct unprivileged uid per worker (set with setpriv before bwrap, so RLIMIT_NPROC binds
 * even when the pool runs as root). A tiny shell prologue, run as the pool's user, first
 * moves itself into the worker's cgroups so every process of the jail is accounted there.
 */
import { existsSync } from 'node:fs';
import { dirname, relative } from 'node:path';

/** Where the runner's folder appears inside the jail. */
export const JAIL_RUNNER_DIR = '/opt/agentmath-sandbox';
/** Where a virtual environment's folder appears inside the jail (its host path stays hidden). */
export const JAIL_ENVIRONMENT_DIR = '/opt/agentmath-python';

/** System paths the interpreter needs, bound read-only when they exist on the host. */
const READ_ONLY_PATHS = ['/usr', '/etc/alternatives', '/etc/ld.so.cache', '/etc/python3', '/etc/python3.11'];
/** Merged-/usr hosts keep these as symlinks into /usr. */
const USR_SYMLINKS = ['bin', 'lib', 'lib64', 'sbin'];

export type JailCommandOptions = {
  pythonPath: string;
  /** Host folder holding runner.py; only it is bound (read-only) into the jail. */
  runnerDir: string;
  uid: number;
  tmpBytes: number;
  /** cgroup.procs files to join before the jail starts (empty when cgroups are off). */
  cgroupProcsFiles: string[];
  /** JSON handed to the runner as argv[1]. */
  runnerConfig: unknown;
};

let systemBinds: string[] | null = null;

/** The bind arguments for the host's system paths, looked up once per process. */
function systemBindArgs(): string[] {
  if (systemBinds === null) {
    systemBinds = [];
    for (const path of READ_ONLY_PATHS) if (existsSync(path)) systemBinds.push('--ro-bind', path, path);
    for (const name of USR_SYMLINKS) systemBinds.push('--symlink', `usr/${name}`, `/${name}`);
  }
  return systemBinds;
}

/**
 * A virtual environment's root when `pythonPath` is its `bin/python` (it has `pyvenv.cfg`):
 * the jail binds it read-only at `JAIL_ENVIRONMENT_DIR` and runs the interpreter from there,
 * so Python finds the environment's packages (a venv is found from the interpreter's own
 * path) while the host's folders stay out of sight. Its base interpreter lives under /usr,
 * which is bound already.
 */
export function virtualEnvironmentRoot(pythonPath: string): string | null {
  const root = dirname(dirname(pythonPath));
  return pythonPath.startsWith('/') && existsSync(`${root}/pyvenv.cfg`) ? root : null;
}

/** Builds `[command, ...args]` for the launcher; the runner's control socket is fd 3. */
export function buildJailCommand(options: JailCommandOptions): { command: string; args: string[] } {
  const { pythonPath, runnerDir, uid, tmpBytes, cgroupProcsFiles, runnerConfig } = options;
  const bind = systemBindArgs();
  const environmentRoot = virtualEnvironmentRoot(pythonPath);
  const environmentBind =
    environmentRoot === null ? [] : ['--ro-bind', environmentRoot, JAIL_ENVIRONMENT_DIR];
  const interpreter =
    environmentRoot === null
      ? pythonPath
      : `${JAIL_ENVIRONMENT_DIR}/${relative(environmentRoot, pythonPath)}`;
  const bwrap = [
    '/usr/bin/bwrap',
    '--unshare-all',
    '--uid',
    String(uid),
    '--gid',
    String(uid),
    '--hostname',
    'sandbox',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--setenv',
    'HOME',
    '/tmp',
    '--setenv',
    'LANG',
    'C.UTF-8',
    '--setenv',
    'OPENBLAS_NUM_THREADS',
    '1',
    '--setenv',
    'OMP_NUM_THREADS',
    '1',
    '--setenv',
    'MPLBACKEND',
    'Agg',
    ...bind,
    '--ro-bind',
    runnerDir,
    JAIL_RUNNER_DIR,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--remount-ro',
    '/dev',
    '--size',
    String(tmpBytes),
    '--tmpfs',
    '/tmp',
    ...environmentBind,
    '--remount-ro',
    '/',
    '--chdir',
    '/tmp',
    interpreter,
    '-I',
    '-B',
    `${JAIL_RUNNER_DIR}/runner.py`,
    JSON.stringify(runnerConfig),
  ];
  const setpriv = [
    '/usr/bin/setpriv',
    `--reuid=${uid}`,
    `--regid=${uid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--',
  ];
  // $1 = number of cgroup.procs files, then the files, then the command to exec.
  const prologue =
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 97; shift; n=$((n-1)); done; exec "$@"';
  return {
    command: '/bin/sh',
    args: [
      '-c',
      prologue,
      'agentmath-jail',
      String(cgroupProcsFiles.length),
      ...cgroupProcsFiles,
      ...setpriv,
      ...bwrap,
    ],
  };
}

let workerCounter = 0;

/**
 * A uid no other live worker on this machine has: derived from this process's pid (unique
 * among live processes) and a per-process counter (a pool never holds 256 workers at once).
 */
export function allocateWorkerUid(): number {
  workerCounter = (workerCounter + 1) % 256;
  return 1_000_000 + (process.pid % 4_194_304) * 256 + workerCounter;
}
