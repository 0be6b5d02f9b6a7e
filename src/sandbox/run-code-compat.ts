/**
 * SandboxFusion-compatible `POST /run_code`: its request fields in, its response shape out,
 * so verl / ToRL configurations can point at an AgentMath node. Each request runs in a fresh
 * session. `return_code` is the process's status (`sys.exit(3)` gives 3, an uncaught exception
 * 1, a timeout or memory kill null). Differences: only Python; `memory_limit_MB` is accepted but the node's own limit
 * applies; `stdin` and `files` are not supported (a non-empty one is a 400).
 */
import { z } from 'zod';
import type { ExecutionOutcome } from './types.ts';

export const runCodeRequestSchema = z
  .object({
    code: z.string(),
    language: z.enum(['python', 'python3']),
    run_timeout: z.number().positive().optional(),
    compile_timeout: z.number().optional(),
    memory_limit_MB: z.number().optional(),
    stdin: z.string().max(0, 'stdin is not supported').optional(),
    files: z
      .record(z.string(), z.unknown())
      .refine((files) => Object.keys(files).length === 0, 'files are not supported')
      .optional(),
    fetch_files: z.array(z.string()).max(0, 'fetch_files is not supported').optional(),
  })
  .passthrough();

export type RunCodeRequest = z.infer<typeof runCodeRequestSchema>;

type RunStatus = 'Finished' | 'Error' | 'TimeLimitExceeded' | 'MemoryLimitExceeded';

/** The SandboxFusion response body. */
export type RunCodeResponse = {
  status: 'Success' | 'Failed' | 'SandboxError';
  message: string;
  compile_result: null;
  run_result: {
    status: RunStatus;
    execution_time: number;
    return_code: number | null;
    stdout: string;
    stderr: string;
  } | null;
  executor_pod_name: null;
  files: Record<string, never>;
};

/** Maps one outcome to the SandboxFusion response (`elapsedMs` is the wall time of the call). */
export function toRunCodeResponse(outcome: ExecutionOutcome, elapsedMs: number): RunCodeResponse {
  const seconds = elapsedMs / 1000;
  const respond = (
    status: RunCodeResponse['status'],
    runStatus: RunStatus,
    returnCode: number | null,
    stdout: string,
    stderr: string,
  ): RunCodeResponse => ({
    status,
    message: '',
    compile_result: null,
    run_result: { status: runStatus, execution_time: seconds, return_code: returnCode, stdout, stderr },
    executor_pod_name: null,
    files: {},
  });
  switch (outcome.status) {
    case 'ok':
      return respond('Success', 'Finished', 0, outcome.stdout, outcome.stderr);
    case 'error':
      // The process's own status: `sys.exit(3)` is 3, an uncaught exception 1.
      return respond(
        'Failed',
        'Finished',
        outcome.exitCode ?? 1,
        outcome.stdout,
        `${outcome.stderr}${outcome.exception}\n`,
      );
    case 'timeout':
      return respond('Failed', 'TimeLimitExceeded', null, outcome.stdout, '');
    case 'memory-exceeded':
      return respond(
        'Failed',
        'MemoryLimitExceeded',
        null,
        '',
        `memory limit of ${outcome.limitBytes} bytes exceeded\n`,
      );
    case 'killed':
      return /^timeout/.test(outcome.reason)
        ? respond('Failed', 'TimeLimitExceeded', null, '', `${outcome.reason}\n`)
        : respond('Failed', 'Error', null, '', `${outcome.reason}\n`);
  }
}

/** The response when the node itself failed (pool full, worker start failure). */
export function runCodeSandboxError(message: string): RunCodeResponse {
  return {
    status: 'SandboxError',
    message,
    compile_result: null,
    run_result: null,
    executor_pod_name: null,
    files: {},
  };
}
