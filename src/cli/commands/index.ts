import type { Command } from 'commander';
import { registerCheck } from './check.ts';
import { registerTasks } from './tasks.ts';

/** Adds every subcommand to the program; one line per command file. */
export function registerCommands(program: Command): void {
  registerCheck(program);
  registerTasks(program);
}
