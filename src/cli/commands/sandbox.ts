/** `agentmath sandbox serve|run`: wiring from flags to the sandbox module. */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  createLocalSandbox,
  type ExecutionOutcome,
  SandboxClient,
  type SandboxProvider,
  startSandboxServer,
} from '../../sandbox/index.ts';

const integer = (value: string) => {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0)
    throw new Error(`expected a non-negative integer, got "${value}"`);
  return parsed;
};

type ServeFlags = {
  host: string;
  port: number;
  workers: number;
  warm?: number;
  token?: string;
  auth: boolean;
  preload: string;
  memoryMb: number;
  idleTtlMs: number;
  cgroups: 'auto' | 'off';
};

export function registerSandbox(program: Command): void {
  const sandbox = program
    .command('sandbox')
    .description('the jailed Python sandbox: serve it over HTTP or run one cell');

  sandbox
    .command('serve')
    .description('serve jailed Python sessions over HTTP (token from --token or AGENTMATH_SANDBOX_TOKEN)')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', integer, 8470)
    .option('--workers <n>', 'most sessions (jailed workers) at once', integer, 8)
    .option('--warm <n>', 'idle warm workers kept ready (default: min(2, workers))', integer)
    .option(
      '--token <token>',
      'require this bearer token (default: AGENTMATH_SANDBOX_TOKEN); empty is refused',
    )
    .option('--no-auth', 'serve a non-loopback --host without a token (printed as a warning)')
    .option('--preload <modules>', 'modules imported by warm workers, comma-separated', 'sympy,numpy,scipy')
    .option('--memory-mb <mb>', 'memory limit per worker', integer, 1024)
    .option('--idle-ttl-ms <ms>', 'close sessions unused this long', integer, 30 * 60_000)
    .option('--cgroups <mode>', 'auto | off', 'auto')
    .action(async (flags: ServeFlags) => {
      const token = flags.token ?? process.env.AGENTMATH_SANDBOX_TOKEN;
      const server = await startSandboxServer({
        host: flags.host,
        port: flags.port,
        token,
        noAuth: !flags.auth,
        poolOptions: {
          maxWorkers: Math.max(1, flags.workers),
          warmWorkers: Math.min(flags.warm ?? 2, Math.max(1, flags.workers)),
          preload: flags.preload.split(',').filter(Boolean),
          memoryLimitBytes: flags.memoryMb * 1024 * 1024,
          idleTtlMs: flags.idleTtlMs,
          cgroups: flags.cgroups,
        },
      });
      process.stdout.write(
        `sandbox serving on ${server.url} (workers ${flags.workers}, token ${token ? 'required' : 'not required'})\n`,
      );
      const stop = () => {
        void server.close().then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });

  sandbox
    .command('run')
    .description('run one cell (from -c or stdin) in a fresh jailed session and print the outcome JSON')
    .option('-c, --code <code>', 'the Python code (default: read stdin)')
    .option('--timeout-ms <ms>', 'call timeout', integer, 10_000)
    .option('--url <url>', 'run on this sandbox node instead of a local jail')
    .action(async (flags: { code?: string; timeoutMs: number; url?: string }) => {
      const code = flags.code ?? readFileSync(0, 'utf8');
      const provider: SandboxProvider = flags.url
        ? new SandboxClient({ url: flags.url })
        : createLocalSandbox({ warmWorkers: 1, maxWorkers: 1 });
      let outcome: ExecutionOutcome;
      try {
        const session = await provider.openSession();
        outcome = await session.execute(code, { timeoutMs: flags.timeoutMs });
        await session.close();
      } finally {
        await provider.close();
      }
      process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
      process.exitCode = outcome.status === 'ok' ? 0 : 1;
    });
}
