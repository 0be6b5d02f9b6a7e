/**
 * The `bench` command group. Each module adds its own `bench <thing>` subcommand with
 * `benchCommand(program).command('<thing>')` from its command file; this file only creates
 * the group once, whichever module asks first.
 */
import type { Command } from 'commander';

/** The `bench` group of `program`, created on first use. */
export function benchCommand(program: Command): Command {
  const existing = program.commands.find((command) => command.name() === 'bench');
  if (existing) return existing;
  return program
    .command('bench')
    .description('benchmarks that print p50/p99 figures and baselines (a table, or JSON with --json)');
}
