/**
 * `agentmath simulate` refuses flags that would be ignored or cannot apply, before it simulates
 * anything, with an error that names the flag.
 */
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { startCli } from './cli-process.ts';

const run = async (args: string[]) =>
  startCli(['simulate', ...args], { cwd: tmpdir(), limitMs: 60_000 }).done;

describe('agentmath simulate flags', () => {
  it('names the flag it refuses', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['--kv-budget', '2', '--configuration', 'async'],
        /--kv-budget applies to async\+partial\+prefix-aware\+kv-budget/,
      ],
      [['--kv-budget', '-1'], /--kv-budget must be a number > 0/],
      [
        ['--tail-cut', '0.3', '--configuration', 'async'],
        /--tail-cut applies to async\+partial\+prefix-aware\+kv-budget\+tail-cut/,
      ],
      [['--tail-cut', '1'], /--tail-cut must be a fraction between 0 and 1 \(got "1"\)/],
      [['--configuration', 'nonsense'], /--configuration: unknown nonsense/],
      [['--steps', '0'], /--steps must be an integer >= 1/],
      [['--calibrate', '--tail-cut', '0.5'], /apply to the simulated configurations, not to --calibrate/],
    ];
    for (const [args, message] of cases) {
      const result = await run(args);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr).toMatch(message);
    }
  }, 120_000);
});
