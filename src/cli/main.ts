/**
 * The `agentmath` command. Each subcommand lives in `commands/<name>.ts` and only wires
 * options to the modules that do the work; there is no logic here.
 */
import { Command } from 'commander';
import { registerCommands } from './commands/index.ts';

const program = new Command();
program
  .name('agentmath')
  .description('Tool-integrated mathematical reasoning: agent loop, sandbox, grader, RL and evaluation')
  .version('0.1.0')
  .showHelpAfterError();

registerCommands(program);

await program.parseAsync(process.argv).catch((error: unknown) => {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`agentmath: ${typeof code === 'string' ? `[${code}] ` : ''}${message}\n`);
  process.exitCode = process.exitCode || 1;
});
