/**
 * SFT's (and RL's) held-out accuracy is `agentmath eval`'s accuracy: `evaluateHeldOut` and the
 * `eval` command, pointed at the same scripted SGLang server, produce the same trajectories and
 * the same verdicts. The scripts are traps for a grader that reads the joined response: the
 * interpreter prints `\boxed{<first problem's answer>}`, then the model answers with another
 * `\boxed{}` or with none; only the model's own final answer may count.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteLevelTokenizer, writeByteLevelTokenizerFiles } from '../src/engine/index.ts';
import type { RunSummary } from '../src/eval/run-summary.ts';
import { arithEvalProblems } from '../src/tasks/index.ts';
import { evaluateHeldOut, type HeldOutEvalResult } from '../src/train/held-out-eval.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { startScriptedSglangServer } from './agent-fixtures.ts';
import { killAllClis, startCli } from './cli-process.ts';

const problems = arithEvalProblems({ count: 3, levels: [1, 2] });
const [trapAnswer, finalAnswer] = [problems[0]!.answer, problems[1]!.answer];
let folder: string;
let server: Awaited<ReturnType<typeof startScriptedSglangServer>>;
let heldOut: HeldOutEvalResult;

function readTrajectories(dir: string): Trajectory[] {
  return readFileSync(join(dir, 'trajectories.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Trajectory);
}

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-held-out-'));
  server = await startScriptedSglangServer({
    tokenizer: createByteLevelTokenizer(),
    model: {
      parts: [
        `Let me check.\n<code>\nprint("\\\\boxed{${trapAnswer}}")\n</code>`,
        `\nSo the answer is \\boxed{${finalAnswer}}.`,
      ],
    },
  });
  heldOut = await evaluateHeldOut({
    engineUrl: server.url,
    // The scripted server speaks /generate only; the model's tokenizer is named, not asked for.
    tokenizer: createByteLevelTokenizer(),
    problems,
    contextTokens: 768,
    outDir: join(folder, 'held-out'),
    concurrency: 3,
  });
}, 60_000);

afterAll(async () => {
  killAllClis();
  await server.close();
  rmSync(folder, { recursive: true, force: true });
});

describe('held-out evaluation and agentmath eval', () => {
  it('counts only the model’s final answer, not a \\boxed{} printed by the interpreter', () => {
    expect(new Set(problems.map((problem) => problem.answer)).size).toBe(3);
    expect(heldOut.problems).toBe(3);
    expect(heldOut.correct).toBe(1);
    expect(heldOut.usedTools).toBe(3);
    expect(heldOut.toolCalls).toBe(3);
    const saved = readTrajectories(heldOut.runDir);
    expect(saved.map((trajectory) => trajectory.meta?.correct).sort()).toEqual([false, false, true]);
    expect(saved.every((trajectory) => trajectory.answer === finalAnswer)).toBe(true);
  });

  it('counts a trajectory whose model text has no \\boxed{} as no answer, though the interpreter printed the right one', async () => {
    const silent = await startScriptedSglangServer({
      tokenizer: createByteLevelTokenizer(),
      model: {
        parts: [`Let me check.\n<code>\nprint("\\\\boxed{${trapAnswer}}")\n</code>`, '\nThat is the answer.'],
      },
    });
    try {
      const result = await evaluateHeldOut({
        engineUrl: silent.url,
        tokenizer: createByteLevelTokenizer(),
        problems: problems.slice(0, 1),
        contextTokens: 768,
        outDir: join(folder, 'silent'),
      });
      const [trajectory] = readTrajectories(result.runDir);
      expect(trajectory?.segments.find((segment) => segment.kind === 'tool')?.text).toContain(
        `\\boxed{${trapAnswer}}`,
      );
      expect(trajectory?.answer).toBeNull();
      expect(trajectory?.meta?.reason).toBe('no-answer');
      expect(result.correct).toBe(0);
    } finally {
      await silent.close();
    }
  }, 60_000);

  it('agrees with `agentmath eval` on the same problems: same trajectories, same verdicts, same accuracy', async () => {
    const benchFile = join(folder, 'held-out.jsonl');
    writeFileSync(
      benchFile,
      problems
        .map((problem) =>
          JSON.stringify({ id: problem.id, problem: problem.problem, answer: problem.answer }),
        )
        .join('\n'),
    );
    const tokenizerDir = join(folder, 'tokenizer');
    await writeByteLevelTokenizerFiles(tokenizerDir);
    const out = join(folder, 'eval');
    const run = startCli(
      [
        'eval',
        '--bench',
        benchFile,
        '--engine',
        server.url,
        '--api',
        'sglang',
        '--tokenizer',
        tokenizerDir,
        '--prompt',
        'problem-only',
        '--temperature',
        '0',
        '--max-tool-calls',
        '4',
        '--max-tokens',
        '768',
        '--out',
        out,
      ],
      { cwd: folder },
    );
    const result = await run.done;
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as RunSummary;
    expect(summary.avgAtK).toBeCloseTo(heldOut.accuracy, 12);
    const verdicts = (dir: string) =>
      Object.fromEntries(
        readTrajectories(dir).map((trajectory) => [
          trajectory.problemId,
          {
            correct: trajectory.meta?.correct,
            answer: trajectory.answer,
            text: trajectory.segments.map((segment) => segment.text).join(''),
          },
        ]),
      );
    expect(verdicts(out)).toEqual(verdicts(heldOut.runDir));
    const heldOutSummary = JSON.parse(
      readFileSync(join(heldOut.runDir, 'summary.json'), 'utf8'),
    ) as RunSummary;
    expect(heldOutSummary.avgAtK).toBeCloseTo(heldOut.accuracy, 12);
  }, 90_000);
});
