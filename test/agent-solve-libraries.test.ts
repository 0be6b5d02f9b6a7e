/**
 * `agentmath solve` on one example problem per added jail library (docs/sandbox.md): a child
 * process runs the CLI against a scripted server speaking SGLang's `/generate`, whose model
 * writes the documented code; the code runs in the real jailed sandbox and the model boxes
 * what it printed. The prompt the server receives names the library.
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
import { jailLibraryExamples } from './jail-library-examples.ts';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const { NO_COLOR: _noColor, FORCE_COLOR: _forceColor, ...baseEnv } = process.env;

function solve(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(root, 'bin', 'agentmath.js'), 'solve', ...args],
      { cwd: root, timeout: 120_000, env: { ...baseEnv, NO_COLOR: '1' } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const examples = jailLibraryExamples();
let folder: string;
const servers: Awaited<ReturnType<typeof startScriptedSglangServer>>[] = [];
const prompts: string[] = [];

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-solve-libraries-'));
  await writeByteLevelTokenizerFiles(join(folder, 'tokenizer'));
  for (const [index, example] of examples.entries()) {
    servers.push(
      await startScriptedSglangServer({
        tokenizer: createByteLevelTokenizer(),
        gate: async (call, context) => {
          if (call === 0) prompts[index] = context;
        },
        model: {
          parts: [
            `<think>${example.problem}\n<code>\n${example.code}</code>`,
            (output) => `It printed ${output.trim()}.\n</think>\nThe answer is \\boxed{${output.trim()}}.`,
          ],
        },
      }),
    );
  }
});

afterAll(async () => {
  for (const server of servers) await server.close();
  await rm(folder, { recursive: true, force: true });
});

describe('agentmath solve with the jail libraries', () => {
  it('runs each example in the jail and boxes its result', async () => {
    const results = await Promise.all(
      examples.map((example, index) =>
        solve([
          example.problem,
          '--engine',
          servers[index]!.url,
          '--api',
          'sglang',
          '--tokenizer',
          join(folder, 'tokenizer'),
          '--json',
        ]),
      ),
    );
    for (const [index, example] of examples.entries()) {
      const result = results[index]!;
      expect(result.code, `${example.library}: ${result.stderr}`).toBe(0);
      const trajectory = trajectorySchema.parse(JSON.parse(result.stdout));
      expect(trajectory.toolCalls[0]?.outcome, example.library).toMatchObject({
        status: 'ok',
        stdout: `${example.output}\n`,
      });
      expect(trajectory.answer).toBe(example.output);
      expect(prompts[index]).toMatch(
        new RegExp(`The interpreter is Python [\\d.]+ with .*${example.library} \\d`),
      );
    }
  });
});
