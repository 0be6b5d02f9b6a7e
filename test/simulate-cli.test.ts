/**
 * `agentmath simulate` as a user meets it: a wrong command line exits 2 before anything is
 * simulated, with a message that names the flag (and, for a configuration, the valid names);
 * a workload that cannot be simulated exits 1 naming the field and why, instead of hanging or
 * failing with a raw error; `--workload -` reads standard input and a BOM is accepted; Ctrl-C
 * stops a long simulation.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';

afterAll(killAllClis);

const run = async (args: string[]) =>
  startCli(['simulate', ...args], { cwd: tmpdir(), limitMs: 60_000 }).done;

// A workload small enough to simulate in a second: 2 prompts × 2 samples on one replica.
const tiny = {
  name: 'tiny',
  stepPrompts: 2,
  groupSize: 2,
  promptTokens: { constant: 100 },
  responseTokens: { constant: 2000 },
  toolCalls: { mean: 1, max: 2 },
  toolOutputTokens: { constant: 20 },
  toolLatencyMs: { constant: 100 },
  replicas: 1,
  costModel: {
    decodeBaseMs: 6,
    decodePerSequenceMs: 0.03,
    decodePerContextTokenMs: 0.00005,
    prefillPerTokenMs: 0.03,
  },
  kvCapacityTokens: 20_000,
  maxRunningRequests: 8,
  sandboxWorkers: 2,
  budgets: { maxTokens: 4000, maxToolCalls: 2, partialRollouts: 2 },
};

const workloadFile = (changes: Record<string, unknown>, prefix = ''): string => {
  const path = join(mkdtempSync(join(tmpdir(), 'simulate-cli-')), 'workload.json');
  writeFileSync(path, prefix + JSON.stringify({ ...tiny, ...changes }));
  return path;
};

describe('agentmath simulate flags', () => {
  it('exits 2 and names the flag for a wrong command line', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['--kv-budget', '2', '--configuration', 'async'],
        /--kv-budget applies to async\+partial\+prefix-aware\+kv-budget/,
      ],
      [['--kv-budget', '-1'], /--kv-budget <factor>' argument '-1' is invalid/],
      [['--kv-budget', '0'], /--kv-budget <factor>' argument '0' is invalid/],
      [
        ['--tail-cut', '0.3', '--configuration', 'async'],
        /--tail-cut applies to async\+partial\+prefix-aware\+kv-budget\+tail-cut/,
      ],
      [['--tail-cut', '1'], /--tail-cut <fraction>' argument '1' is invalid/],
      [['--tail-cut', '0'], /--tail-cut <fraction>' argument '0' is invalid/],
      [
        ['--configuration', 'nonsense'],
        /--configuration: unknown nonsense; the configurations are static-sync, /,
      ],
      [['--steps', '0'], /--steps <n>' argument '0' is invalid/],
      [['--seeds', '0'], /--seeds <n>' argument '0' is invalid/],
      [['--calibrate', '--tail-cut', '0.5'], /apply to the simulated configurations, not to --calibrate/],
      [['--problems', '5'], /--problems applies only with --calibrate/],
      [['--concurrency', '4', '--model', '/nowhere'], /--concurrency, --model apply only with --calibrate/],
    ];
    for (const [args, message] of cases) {
      const result = await run(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(message);
      expect(result.stderr, args.join(' ')).not.toMatch(/^workload /m);
    }
  }, 240_000);

  it('--help shows the defaults as the numbers they are', async () => {
    const result = await run(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/--steps <n>[\s\S]*?\(default: 16\)/);
    expect(result.stdout).not.toContain('"16"');
  });
});

describe('agentmath simulate workloads', () => {
  it('exits 1 naming the field of a workload that cannot be simulated, without hanging', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ kvCapacityTokens: 10 }, /field "kvCapacityTokens": a trajectory can reach \d+ tokens/],
      [{ stepPrompts: 1e12 }, /field "stepPrompts"/],
      [{ stepPrompts: 50_000, groupSize: 1000 }, /field "stepPrompts": stepPrompts × groupSize is at most/],
      [{ replicas: 1e12 }, /field "replicas"/],
      [
        { responseTokens: { lognormal: { mu: 6, sigma: 1 }, min: 5000, max: 100 } },
        /field "responseTokens": min must not exceed max/,
      ],
      // Every trajectory cut by its budget, or every group all-correct: no group is ever kept.
      [{ budgets: { maxTokens: 400, maxToolCalls: 2, partialRollouts: 2 } }, /SIM_NO_PROGRESS/],
      [{ solveRate: 1 }, /SIM_NO_PROGRESS/],
    ];
    for (const [changes, message] of cases) {
      const result = await run([
        '--workload',
        workloadFile(changes),
        '--steps',
        '2',
        '--configuration',
        'async',
      ]);
      expect(result.code, JSON.stringify(changes)).toBe(1);
      expect(result.stderr, JSON.stringify(changes)).toMatch(message);
      expect(result.stderr).not.toMatch(/Invalid array length/);
    }
  }, 240_000);

  it('accepts a workload with a UTF-8 BOM, and reads one from standard input with --workload -', async () => {
    const withBom = await run([
      '--workload',
      workloadFile({}, '\uFEFF'),
      '--steps',
      '2',
      '--configuration',
      'async',
      '--json',
    ]);
    expect(withBom.stderr).not.toMatch(/not valid JSON/);
    expect(withBom.code).toBe(0);
    const fromFile = JSON.parse(withBom.stdout) as { workload: { name: string }; configurations: unknown[] };
    expect(fromFile.workload.name).toBe('tiny');

    const child = spawn(
      process.execPath,
      [
        'bin/agentmath.js',
        'simulate',
        '--workload',
        '-',
        '--steps',
        '2',
        '--configuration',
        'async',
        '--json',
      ],
      { cwd: join(import.meta.dirname, '..'), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stdin.end(JSON.stringify({ ...tiny, name: 'from-stdin' }));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(0);
    expect((JSON.parse(stdout) as { workload: { name: string } }).workload.name).toBe('from-stdin');
    const fromStdin = JSON.parse(stdout) as { configurations: { batchSeconds: number }[] };
    expect(fromStdin.configurations[0]?.batchSeconds).toBe(
      (fromFile.configurations[0] as { batchSeconds: number }).batchSeconds,
    );
  }, 120_000);

  it('stops on Ctrl-C during a long simulation', async () => {
    const cli = startCli(['simulate', '--workload', 'paper', '--steps', '1000'], {
      cwd: tmpdir(),
      limitMs: 60_000,
    });
    let stderr = '';
    await new Promise<void>((resolve) => {
      cli.child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (/step 0:/.test(stderr)) resolve();
      });
    });
    cli.child.kill('SIGINT');
    const result = await cli.done;
    // Death by SIGINT (re-raised), not the test's kill at its limit (SIGKILL).
    expect(result.signal === 'SIGINT' || result.code === 130).toBe(true);
  }, 120_000);
});
