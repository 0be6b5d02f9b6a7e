/**
 * `agentmath solve` end to end: a child process runs the CLI against a scripted server
 * speaking SGLang's `/generate`, with code run in the real jailed sandbox.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteLevelTokenizer, writeByteLevelTokenizerFiles } from '../src/engine/index.ts';
import { trajectorySchema } from '../src/trajectory/trajectory.ts';
import { startScriptedSglangServer } from './agent-fixtures.ts';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const { NO_COLOR: _noColor, FORCE_COLOR: _forceColor, ...baseEnv } = process.env;

function run(
  args: string[],
  cwd = root,
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(root, 'bin', 'agentmath.js'), ...args],
      { cwd, timeout: 60_000, env: { ...baseEnv, NO_COLOR: '1', ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let folder: string;
let server: Awaited<ReturnType<typeof startScriptedSglangServer>>;
let silent: Awaited<ReturnType<typeof startScriptedSglangServer>>;
let hung: Awaited<ReturnType<typeof startScriptedSglangServer>>;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-solve-'));
  await writeByteLevelTokenizerFiles(join(folder, 'tokenizer'));
  server = await startScriptedSglangServer({
    tokenizer: createByteLevelTokenizer(),
    model: {
      parts: [
        '<think>Sum the squares.\n<code>\nprint(sum(k * k for k in range(1, 11)))\n</code>',
        (output) => `That is ${output.trim()}.\n</think>\nThe answer is \\boxed{${output.trim()}}.`,
      ],
    },
  });
});

beforeAll(async () => {
  silent = await startScriptedSglangServer({
    tokenizer: createByteLevelTokenizer(),
    model: { parts: ['<think>I cannot tell.</think>\nNo idea.'] },
  });
  hung = await startScriptedSglangServer({
    tokenizer: createByteLevelTokenizer(),
    model: { parts: ['never sent'] },
    behaviour: () => 'hang',
  });
});

afterAll(async () => {
  await silent.close();
  await hung.close();
  await server.close();
  await rm(folder, { recursive: true, force: true });
});

describe('agentmath solve', () => {
  const engineFlags = () => [
    '--engine',
    server.url,
    '--api',
    'sglang',
    '--tokenizer',
    join(folder, 'tokenizer'),
  ];

  it('streams the trajectory and prints the answer', async () => {
    const result = await run(['solve', 'Sum of the squares of 1..10?', ...engineFlags(), '--seed', '3']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('print(sum(k * k for k in range(1, 11)))');
    expect(result.stdout).toContain('385');
    expect(result.stdout.trimEnd().endsWith('Answer: 385')).toBe(true);
  });

  it('prints the Trajectory record with --json', async () => {
    const result = await run(['solve', 'Sum of the squares of 1..10?', ...engineFlags(), '--json']);
    expect(result.code).toBe(0);
    const trajectory = trajectorySchema.parse(JSON.parse(result.stdout));
    expect(trajectory.finish).toEqual({ reason: 'answer' });
    expect(trajectory.answer).toBe('385');
    expect(trajectory.toolCalls[0]?.outcome).toMatchObject({ status: 'ok', stdout: '385\n' });
  });

  it('says how to get an engine when none is given and no embedded model exists', async () => {
    const result = await run(['solve', 'anything'], folder, { AGENTMATH_HOME: folder });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/\[NO_ENGINE\] no engine: pass --engine URL/);
  });

  it('asks for a tokenizer with a token engine', async () => {
    const result = await run(['solve', 'x', '--engine', server.url, '--api', 'sglang']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--tokenizer DIR/);
  });

  it('refuses an --engine without a scheme and a --tokenizer that is a file, naming the option', async () => {
    const url = await run([
      'solve',
      'What is 1+1?',
      '--engine',
      'localhost:31599',
      '--api',
      'openai',
      '--model',
      'm',
    ]);
    expect(url.code).toBe(2);
    expect(url.stderr).toContain(
      "option '--engine <url>' argument 'localhost:31599' is invalid. expected an http:// or https:// URL, e.g. http://localhost:31599",
    );
    const file = join(folder, 'tokenizer', 'tokenizer.json');
    const tokenizer = await run(['solve', 'What is 1+1?', '--engine', server.url, '--tokenizer', file]);
    expect(tokenizer.code).toBe(2);
    expect(tokenizer.stderr).toContain(
      `option '--tokenizer <dir>' argument '${file}' is invalid. it is a file`,
    );
    expect(tokenizer.stderr).not.toContain('ENOTDIR');
  });

  it("keeps prompt + new tokens within the served model's context (/v1/models), which refuses more", async () => {
    const small = await startScriptedSglangServer({
      tokenizer: createByteLevelTokenizer(),
      model: { parts: ['<think>Two.</think>\nThe answer is \\boxed{2}.'] },
      contextLength: 600,
    });
    try {
      // --max-tokens and --max-new-tokens at their defaults (16384, 4096): far past 600.
      const tokenizer = ['--api', 'sglang', '--tokenizer', join(folder, 'tokenizer')];
      const result = await run(['solve', 'What is 1+1?', '--engine', small.url, ...tokenizer]);
      expect(result.stderr).not.toContain('exceeds the model');
      expect(result.stdout).toContain('Answer: 2');
      expect(result.code).toBe(0);
    } finally {
      await small.close();
    }
  });

  it('refuses an empty problem with status 2', async () => {
    const result = await run(['solve', '  ', ...engineFlags()]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/the problem is empty/);
  });

  it('exits 1 when the trajectory ends without an answer', async () => {
    const tokenizer = ['--api', 'sglang', '--tokenizer', join(folder, 'tokenizer')];
    const result = await run(['solve', 'What is x?', '--engine', silent.url, ...tokenizer]);
    expect(result.stdout).toContain('Answer: (none)');
    expect(result.stderr).toMatch(/no answer \(finish: no-answer\)/);
    expect(result.code).toBe(1);
  });

  it('says when the prompt does not fit the context, before calling the engine', async () => {
    const calls = server.calls();
    const result = await run([
      'solve',
      'Add these: 1+1. '.repeat(20),
      ...engineFlags(),
      '--max-tokens',
      '64',
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /the prompt is \d+ tokens and does not fit the context budget of 64 tokens/,
    );
    expect(server.calls()).toBe(calls);
  });

  it('gives up on a hung engine after --engine-timeout-ms, naming its URL', async () => {
    const tokenizer = ['--api', 'sglang', '--tokenizer', join(folder, 'tokenizer')];
    const result = await run([
      'solve',
      'Compute 1+1.',
      '--engine',
      hung.url,
      ...tokenizer,
      '--engine-timeout-ms',
      '300',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/timed out/);
    expect(result.stderr).toContain(`${hung.url} timed out after 300 ms`);
  });

  it('refuses out-of-range numbers before starting anything, naming the option', async () => {
    const result = await run(['solve', 'x', ...engineFlags(), '--top-p', '0']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /option '--top-p <p>' argument '0' is invalid\. expected a number > 0 and <= 1/,
    );
  });
});
