/**
 * `--engine URL URL …` (as the README and docs/rl.md write it) and a repeated `--engine URL`
 * `rollout` and `train rl` take every URL in order, either way or both; a word after
 * them that is not a URL is refused, never taken as an engine; `eval` takes them the same way
 * and spreads its requests over the servers through the prefix-aware router. The parsing is
 * read from the real command definitions; one real `rollout` shows both replicas reach the
 * router, and one real `eval` that both scripted servers answer.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerCommands } from '../src/cli/commands/index.ts';
import { createByteLevelTokenizer, writeByteLevelTokenizerFiles } from '../src/engine/index.ts';
import { startScriptedSglangServer } from './agent-fixtures.ts';
import { killAllClis, startCli } from './cli-process.ts';

const A = 'http://127.0.0.1:1';
const B = 'http://127.0.0.1:2';
const C = 'http://127.0.0.1:3';

/** The subcommand at `path`, with commander's exits and output turned into thrown errors. */
function command(path: string[]): Command {
  const program = new Command();
  registerCommands(program);
  const found = path.reduce(
    (current: Command, name) => current.commands.find((sub) => sub.name() === name) as Command,
    program,
  );
  found.exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  return found;
}

function parsed(path: string[], args: string[]): Record<string, unknown> {
  const found = command(path);
  const { operands, unknown } = found.parseOptions(args);
  expect([...operands, ...unknown]).toEqual([]);
  return found.opts();
}

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'engine-urls-'));
});

afterAll(async () => {
  killAllClis();
  await rm(dir, { recursive: true, force: true });
});

describe('--engine with several URLs', () => {
  it.each([[['rollout']], [['train', 'rl']]])('%j takes URL URL, a repeated flag, and both', (path) => {
    expect(parsed(path, ['--engine', A, B, '--out', 'x']).engine).toEqual([A, B]);
    expect(parsed(path, ['--engine', A, '--engine', B]).engine).toEqual([A, B]);
    expect(parsed(path, ['--engine', A, B, '--engine', C]).engine).toEqual([A, B, C]);
    // No --engine: none given (rollout's default is [], train rl leaves it to the config's default).
    expect(parsed(path, []).engine ?? []).toEqual([]);
  });

  it('train rl takes --sandbox URL URL the same way', () => {
    expect(parsed(['train', 'rl'], ['--sandbox', A, B, '--sandbox', C]).sandbox).toEqual([A, B, C]);
  });

  it('refuses a word after the URLs that is not one (nothing is swallowed silently)', () => {
    expect(() => command(['rollout']).parseOptions(['--engine', A, 'stray'])).toThrow(
      /argument 'stray' is invalid\. expected an http/,
    );
  });

  it('eval takes URL URL, a repeated flag, and both', () => {
    expect(parsed(['eval'], ['--engine', A]).engine).toEqual([A]);
    expect(parsed(['eval'], ['--engine', A, B]).engine).toEqual([A, B]);
    expect(parsed(['eval'], ['--engine', A, '--engine', B, C]).engine).toEqual([A, B, C]);
    expect(parsed(['eval'], []).engine).toBeUndefined();
  });

  it('a real eval spreads its trajectories over both servers of one --engine', async () => {
    const tokenizer = createByteLevelTokenizer();
    const servers = await Promise.all(
      [0, 1].map(() => startScriptedSglangServer({ model: { parts: ['\\boxed{2}'] }, tokenizer })),
    );
    try {
      const bench = join(dir, 'eval-bench.jsonl');
      const lines = Array.from({ length: 6 }, (_, index) =>
        JSON.stringify({ id: `p${index}`, problem: `What is ${index}+2-${index}?`, answer: '2' }),
      );
      await writeFile(bench, `${lines.join('\n')}\n`);
      const tokenizerDir = join(dir, 'eval-tokenizer');
      await writeByteLevelTokenizerFiles(tokenizerDir);
      const result = await startCli(
        [
          ...['eval', '--bench', bench, '--engine', servers[0]!.url, servers[1]!.url],
          ...['--tokenizer', tokenizerDir, '--concurrency', '4', '--out', join(dir, 'eval-run')],
        ],
        { cwd: dir },
      ).done;
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toMatch(/avg@1 100\.0%/);
      // Each trajectory sticks to one replica; six of them reach both.
      expect(servers[0]!.calls()).toBeGreaterThan(0);
      expect(servers[1]!.calls()).toBeGreaterThan(0);
      expect(servers[0]!.calls() + servers[1]!.calls()).toBe(6);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  }, 120_000);

  it('a real rollout routes over both URLs of one --engine', async () => {
    const bench = join(dir, 'bench.jsonl');
    await writeFile(bench, `${JSON.stringify({ id: 'a', problem: 'What is 1+1?', answer: '2' })}\n`);
    const tokenizer = join(dir, 'tokenizer');
    await writeByteLevelTokenizerFiles(tokenizer);
    const result = await startCli(
      [
        'rollout',
        '--bench',
        bench,
        '--engine',
        A,
        B,
        '--tokenizer',
        tokenizer,
        '--steps',
        '1',
        '--group-size',
        '2',
        '--batch-size',
        '1',
        '--sandbox-workers',
        '1',
        '--out',
        join(dir, 'run'),
      ],
      { cwd: dir },
    ).done;
    expect(result.stderr).not.toMatch(/too many arguments/);
    expect(result.stderr).toContain(`router over ${A}, ${B}`);
  }, 120_000);
});
