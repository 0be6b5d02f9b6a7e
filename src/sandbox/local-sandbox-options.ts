/**
 * The validated options of the local pool (zod, strict: a misspelt key is an error), with
 * defaults sized for one trajectory's math code on a small machine.
 */
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { jailPython } from '../shared/python-environments.ts';

const MiB = 1024 * 1024;
/** The most workers one local pool runs (more sessions belong on sandbox nodes). */
export const MAX_LOCAL_WORKERS = 256;

/** A module name a worker may preload (`sympy`, `scipy.optimize`). */
export const SANDBOX_MODULE_NAME = /^[A-Za-z_][\w.]*$/;

/** Host folder of the in-jail runner (python/agentmath_sandbox in the package). */
export const DEFAULT_RUNNER_DIR = fileURLToPath(new URL('../../python/agentmath_sandbox', import.meta.url));

export const localSandboxOptionsSchema = z
  .object({
    /** Most live workers (= most open sessions); idle warm workers count too. */
    maxWorkers: z.number().int().min(1).max(MAX_LOCAL_WORKERS).default(8),
    /** Idle pre-started workers kept ready so a new session costs milliseconds. */
    warmWorkers: z.number().int().min(0).max(MAX_LOCAL_WORKERS).default(2),
    /** How long `openSession` waits for a free slot before throwing SANDBOX_POOL_FULL. */
    acquireTimeoutMs: z.number().int().min(0).default(10_000),
    /** A session unused for this long is closed; its next call reports `killed`. */
    idleTtlMs: z
      .number()
      .int()
      .min(1)
      .default(30 * 60_000),
    defaultTimeoutMs: z.number().int().min(1).default(10_000),
    maxTimeoutMs: z.number().int().min(1).default(300_000),
    /** Extra time after the in-runner interrupt before the jail is killed from outside. */
    graceMs: z.number().int().min(1).default(1_000),
    /** RLIMIT_AS of the runner and the cgroup memory limit of the jail. */
    memoryLimitBytes: z
      .number()
      .int()
      .min(64 * MiB)
      .default(1024 * MiB),
    tmpBytes: z
      .number()
      .int()
      .min(MiB)
      .default(64 * MiB),
    /** RLIMIT_NPROC of the worker's own uid (threads count). */
    processes: z.number().int().min(4).default(32),
    fileSizeBytes: z
      .number()
      .int()
      .min(1)
      .default(16 * MiB),
    openFiles: z.number().int().min(16).default(256),
    /** RLIMIT_CPU of a worker over its whole life (a backstop; per-call limits come first). */
    cpuSeconds: z.number().int().min(1).default(3_600),
    /** Per stream and call; beyond it output is counted and dropped. */
    outputLimitBytes: z
      .number()
      .int()
      .min(1_024)
      .default(64 * 1024),
    /** Modules imported before a worker reports ready. */
    preload: z.array(z.string().regex(SANDBOX_MODULE_NAME)).default(['sympy', 'numpy', 'scipy']),
    /** The jail's interpreter; a virtual environment's is bound read-only with its environment. */
    pythonPath: z.string().default(() => jailPython()),
    runnerDir: z.string().default(DEFAULT_RUNNER_DIR),
    /** 'auto' uses cgroup memory/pids limits where the machine allows; 'off' never does. */
    cgroups: z.enum(['auto', 'off']).default('auto'),
    startupTimeoutMs: z.number().int().min(1).default(60_000),
    /** Most workers starting at once to refill the warm set (starts on demand are not capped). */
    maxConcurrentStarts: z.number().int().min(1).default(2),
  })
  .strict();

export type LocalSandboxOptions = z.input<typeof localSandboxOptionsSchema>;
export type ResolvedLocalSandboxOptions = z.output<typeof localSandboxOptionsSchema>;
