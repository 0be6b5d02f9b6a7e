import type { Command } from 'commander';
import { checkEnvironment } from '../../shared/environment-check.ts';

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description('check that this machine has what AgentMath needs (exit code 0 when it does)')
    .option('--json', 'print the results as JSON')
    .action(async (options: { json?: boolean }) => {
      const results = await checkEnvironment();
      if (options.json) {
        process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
      } else {
        const width = Math.max(...results.map((result) => result.name.length));
        for (const result of results) {
          const mark = result.ok ? '✓' : result.required ? '✗' : '–';
          const fix = result.ok || !result.fix ? '' : `  → ${result.fix}`;
          process.stdout.write(`${mark} ${result.name.padEnd(width)}  ${result.detail}${fix}\n`);
        }
      }
      process.exitCode = results.every((result) => result.ok || !result.required) ? 0 : 1;
    });
}
