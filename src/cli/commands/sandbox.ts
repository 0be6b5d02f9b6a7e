/** `agentmath sandbox serve|run`: wiring from flags to the sandbox module. */
import type { Command } from 'commander';
import {
  createLocalSandbox,
  type ExecutionOutcome,
  localSandboxOptionsSchema,
  SandboxClient,
  type SandboxProvider,
  startSandboxServer,
} from '../../sandbox/index.ts';
import { readTextInput } from '../../shared/text-input.ts';
import { choiceOption, defaultOf, hostOption, integerOption, portOption } from '../cli-options.ts';
import { onShutdown } from '../process-lifecycle.ts';

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
    .option('--host <host>', 'address to listen on', hostOption, '127.0.0.1')
    .option('--port <port>', 'port (0 picks a free one)', portOption, 8470)
    .option(
      '--workers <n>',
      'most sessions (jailed workers) at once',
      integerOption({ min: 1, max: 256 }),
      defaultOf(localSandboxOptionsSchema, 'maxWorkers'),
    )
    .option(
      '--warm <n>',
      'idle warm workers kept ready (default: min(2, workers))',
      integerOption({ max: 256 }),
    )
    .option(
      '--token <token>',
      'require this bearer token (default: AGENTMATH_SANDBOX_TOKEN); empty is refused',
    )
    .option('--no-auth', 'serve a non-loopback --host without a token (printed as a warning)')
    .option('--preload <modules>', 'modules imported by warm workers, comma-separated', 'sympy,numpy,scipy')
    .option(
      '--memory-mb <mb>',
      'memory limit per worker',
      integerOption({ min: 64, max: 1_048_576 }),
      defaultOf(localSandboxOptionsSchema, 'memoryLimitBytes') / (1024 * 1024),
    )
    .option(
      '--idle-ttl-ms <ms>',
      'close sessions unused this long',
      integerOption({ min: 1 }),
      defaultOf(localSandboxOptionsSchema, 'idleTtlMs'),
    )
    .option('--cgroups <mode>', 'auto | off', choiceOption(['auto', 'off']), 'auto')
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
      // Served until a signal: the lifecycle closes the server, its launcher and jails, then exits.
      onShutdown(() => server.close());
      await new Promise<never>(() => {});
    });

  sandbox
    .command('run')
    .description(
      'run one cell (from -c, a file, or stdin) in a fresh jailed session and print the outcome JSON',
    )
    .option('-c, --code <code>', 'the Python code (default: read stdin)')
    .option('--file <file>', 'read the code from this file (- for standard input)')
    .option('--timeout-ms <ms>', 'call timeout', integerOption({ min: 1 }), 10_000)
    .option('--url <url>', 'run on this sandbox node instead of a local jail')
    .action(async (flags: { code?: string; file?: string; timeoutMs: number; url?: string }) => {
      const code = flags.code ?? (await readTextInput(flags.file ?? '-', 'code file'));
      const provider: SandboxProvider = flags.url
        ? new SandboxClient({ url: flags.url })
        : createLocalSandbox({ warmWorkers: 1, maxWorkers: 1 });
      const unregister = onShutdown(() => provider.close());
      let outcome: ExecutionOutcome;
      try {
        const session = await provider.openSession();
        outcome = await session.execute(code, { timeoutMs: flags.timeoutMs });
        await session.close();
      } finally {
        unregister();
        await provider.close();
      }
      process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
      process.exitCode = outcome.status === 'ok' ? 0 : 1;
    });
}
