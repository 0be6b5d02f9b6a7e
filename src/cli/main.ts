/**
 * The `agentmath` command. Each subcommand lives in `commands/<name>.ts` and only wires
 * options to the modules that do the work; there is no logic here beyond exit statuses:
 * 0 success, 1 the work failed, 2 the command line was wrong (commander's parse errors,
 * `CLI_BAD_OPTION`, a resume that would change the run, an `--out` that is a file or holds
 * another job's files, a run folder another process is writing, a server refused by the bind
 * rule: `AUTH_*`), 128+N death by signal N
 * (see `process-lifecycle.ts`).
 */
import { Command } from 'commander';
import { MODEL_IMPORT_REFUSED } from '../model/index.ts';
import { BIND_AUTH_CODES } from '../shared/bind-auth.ts';
import { RUN_FOLDER_REFUSED } from '../shared/run-folder-check.ts';
import { RUN_FOLDER_LOCKED } from '../shared/run-folder-lock.ts';
import { RUN_IDENTITY_MISMATCH } from '../shared/run-identity.ts';
import { CLI_USAGE_CODE, showChoicesInHelp } from './cli-options.ts';
import { registerCommands } from './commands/index.ts';
import { finishProcess, installProcessLifecycle } from './process-lifecycle.ts';

installProcessLifecycle();

/** Error codes that mean the command line was wrong: exit status 2. */
const USAGE_CODES = new Set<string>([
  CLI_USAGE_CODE,
  RUN_IDENTITY_MISMATCH,
  RUN_FOLDER_REFUSED,
  RUN_FOLDER_LOCKED,
  MODEL_IMPORT_REFUSED,
  ...BIND_AUTH_CODES,
]);

const program = new Command();
program
  .name('agentmath')
  .description('Tool-integrated mathematical reasoning: agent loop, sandbox, grader, RL and evaluation')
  .version('0.1.0')
  .showHelpAfterError('(add --help for usage)')
  // Commander has printed its message already; only the status is decided here.
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));

registerCommands(program);
showChoicesInHelp(program);

await program.parseAsync(process.argv).catch((error: unknown) => {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`agentmath: ${typeof code === 'string' ? `[${code}] ` : ''}${message}\n`);
  process.exitCode = typeof code === 'string' && USAGE_CODES.has(code) ? 2 : process.exitCode || 1;
});
await finishProcess();
