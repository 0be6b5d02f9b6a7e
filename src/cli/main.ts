/**
 * The `agentmath` command. Each subcommand lives in `commands/<name>.ts` and only wires
 * options to the modules that do the work; there is no logic here beyond exit statuses:
 * 0 success, 1 the work failed, 2 the command line was wrong (commander's parse errors,
 * `CLI_BAD_OPTION`, a resume that would change the run), 128+N death by signal N (see `process-lifecycle.ts`).
 */
import { Command } from 'commander';
import { RUN_IDENTITY_MISMATCH } from '../shared/run-identity.ts';
import { CLI_USAGE_CODE } from './cli-options.ts';
import { registerCommands } from './commands/index.ts';
import { finishProcess, installProcessLifecycle } from './process-lifecycle.ts';

installProcessLifecycle();

const program = new Command();
program
  .name('agentmath')
  .description('Tool-integrated mathematical reasoning: agent loop, sandbox, grader, RL and evaluation')
  .version('0.1.0')
  .showHelpAfterError('(add --help for usage)')
  // Commander has printed its message already; only the status is decided here.
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));

registerCommands(program);

await program.parseAsync(process.argv).catch((error: unknown) => {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`agentmath: ${typeof code === 'string' ? `[${code}] ` : ''}${message}\n`);
  process.exitCode = code === CLI_USAGE_CODE || code === RUN_IDENTITY_MISMATCH ? 2 : process.exitCode || 1;
});
await finishProcess();
