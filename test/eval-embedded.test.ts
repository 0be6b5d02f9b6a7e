/**
 * `agentmath eval` end to end against the embedded model: a byte model of the `test` shape is
 * trained on the trainer (SFT on the exact token sequences the agent loop will see) until it
 * reproduces, greedily, known responses to three problems — a right answer through a code
 * call, a wrong text-only answer, and a failing code call fixed by a second one — and saved as
 * the model of `.agentmath/models/arith-tool` of a temporary project. The real CLI, started in that folder
 * without `--engine`, serves the model itself, runs the code in the real jailed sandbox and
 * writes a summary that must match hand-computed metrics exactly.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createByteLevelTokenizer, type HttpEngine } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/tags-dialect.ts';
import { createLocalSandbox } from '../src/sandbox/index.ts';
import { buildSftExample } from '../src/train/index.ts';
import { responseTokens } from '../src/trajectory/loss-mask.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { type CliResult, killAllClis, startCli } from './cli-process.ts';
import { memoriseByteModel } from './memorised-byte-model.ts';

const EOS = 256;
const tokenizer = createByteLevelTokenizer();

/** A known response: model text, with code blocks whose interpreter output the sandbox supplies. */
type Known = { id: string; problem: string; answer: string; model: string[]; codes: string[] };

// Each model piece but the last ends with a code block; the sandbox's output goes in between.
const KNOWN: Known[] = [
  {
    id: 'P1',
    problem: 'Compute 6*7.',
    answer: '42',
    model: ['<think>Use code.<code>\nprint(6*7)\n</code>', '</think>\n\\boxed{42}.'],
    codes: ['print(6*7)'],
  },
  { id: 'P2', problem: 'Guess 2+2.', answer: '4', model: ['<think>Easy.</think>\n\\boxed{5}.'], codes: [] },
  {
    id: 'P3',
    problem: 'Sum 3 and 4.',
    answer: '7',
    model: ['<think><code>\n(\n</code>', '<code>\nprint(3+4)\n</code>', '</think>\n\\boxed{7}.'],
    codes: ['(', 'print(3+4)'],
  },
];

/** The expected token sequence of a problem, cut into the agent's segments. */
type Expected = {
  known: Known;
  inputIds: number[];
  lossMask: number[];
  promptLength: number;
  /** Token ids of each model segment (the last ends with EOS). */
  modelSegments: number[][];
  toolSegments: number[][];
};

let folder: string;
beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-eval-embedded-'));
});
afterAll(() => {
  killAllClis();
  rmSync(folder, { recursive: true, force: true });
});

function runCli(args: string[]): Promise<CliResult> {
  return startCli(args, { cwd: folder, limitMs: 100_000 }).done;
}

/**
 * Runs each problem's code in a fresh session of the real sandbox (as the agent does, one
 * session per trajectory) and builds the SFT example from the rendered outputs.
 */
async function expectedSequences(): Promise<Expected[]> {
  const sandbox = createLocalSandbox({ maxWorkers: 1, warmWorkers: 1 });
  try {
    const expected: Expected[] = [];
    for (const known of KNOWN) {
      const session = await sandbox.openSession();
      const toolTexts: string[] = [];
      for (const code of known.codes) {
        const outcome = await session.execute(code);
        toolTexts.push(tagsDialect.renderToolResult(outcome, { outputOpening: '\n<interpreter>\n' }));
      }
      await session.close();
      const segments = known.model.flatMap((text, index) => {
        const tool = toolTexts[index];
        return [
          { kind: 'model' as const, text },
          ...(tool === undefined ? [] : [{ kind: 'tool' as const, text: tool }]),
        ];
      });
      const example = buildSftExample(
        {
          problem: { id: known.id, family: 'known', level: 1, problem: known.problem, answer: known.answer },
          style: known.codes.length > 0 ? 'tool' : 'text',
          segments,
        },
        tokenizer,
        tagsDialect,
      );
      const encode = (text: string) => tokenizer.encode(text, { specialTokens: false });
      const modelSegments = known.model.map(encode);
      modelSegments.at(-1)?.push(EOS);
      expected.push({
        known,
        inputIds: example.inputIds,
        lossMask: example.lossMask,
        promptLength: example.lossMask.indexOf(1),
        modelSegments,
        toolSegments: toolTexts.map(encode),
      });
    }
    return expected;
  } finally {
    await sandbox.close();
  }
}

/** The first model segment that greedy decoding does not reproduce, or null when all do. */
async function firstMismatch(engine: HttpEngine, expected: Expected[]): Promise<string | null> {
  for (const sequence of expected) {
    const prefix = sequence.inputIds.slice(0, sequence.promptLength);
    for (const [index, segment] of sequence.modelSegments.entries()) {
      const result = await engine.generate({
        promptTokenIds: prefix,
        maxNewTokens: segment.length + 4,
        temperature: 0,
        topP: 1,
        stop: [...tagsDialect.stopStrings],
      });
      if (JSON.stringify(result.tokenIds) !== JSON.stringify(segment)) {
        return `${sequence.known.id} segment ${index}: got ${JSON.stringify(result.text)}`;
      }
      prefix.push(...segment, ...(sequence.toolSegments[index] ?? []));
    }
  }
  return null;
}

describe('agentmath eval against the embedded model', () => {
  let expected: Expected[];

  beforeAll(async () => {
    expected = await expectedSequences();
    await memoriseByteModel({
      sequences: expected.map(({ inputIds, lossMask }) => ({ inputIds, lossMask })),
      out: join(folder, '.agentmath', 'models', 'arith-tool', 'model'),
      learned: (engine) => firstMismatch(engine, expected),
    });
  }, 300_000);

  it('serves the saved model itself; every trajectory and metric matches the hand-computed values', async () => {
    const bench = join(folder, 'known.jsonl');
    writeFileSync(
      bench,
      KNOWN.map(({ id, problem, answer }) => JSON.stringify({ id, problem, answer })).join('\n'),
    );
    const out = join(folder, 'run');
    const result = await runCli([
      'eval',
      '--bench',
      bench,
      '-k',
      '2',
      '--temperature',
      '0',
      '--concurrency',
      '2',
      '--sandbox-workers',
      '2',
      '--out',
      out,
    ]);
    expect(result.stderr).not.toMatch(/agentmath: \[/);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain('starting the embedded model');

    const trajectories = readFileSync(join(out, 'trajectories.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Trajectory);
    // Every (problem, sample) exactly once.
    expect(trajectories.map((t) => `${t.problemId}/${t.sample}`).sort()).toEqual([
      'P1/0',
      'P1/1',
      'P2/0',
      'P2/1',
      'P3/0',
      'P3/1',
    ]);
    for (const trajectory of trajectories) {
      const sequence = expected.find((entry) => entry.known.id === trajectory.problemId)!;
      // The exact tokens: the prompt the model was trained on, then the known response, with
      // loss mask 1 on the model's tokens (EOS included) and 0 on the interpreter's.
      expect(trajectory.prompt.tokenIds).toEqual(sequence.inputIds.slice(0, sequence.promptLength));
      expect(responseTokens(trajectory)).toMatchObject({
        tokenIds: sequence.inputIds.slice(sequence.promptLength),
        lossMask: sequence.lossMask.slice(sequence.promptLength),
      });
      const kinds = sequence.known.model.flatMap((_, index) =>
        index < sequence.known.codes.length ? ['model', 'tool'] : ['model'],
      );
      expect(trajectory.segments.map((segment) => segment.kind)).toEqual(kinds);
      expect(trajectory.toolCalls.map((call) => call.code)).toEqual(sequence.known.codes);
    }
    const byKey = new Map(trajectories.map((t) => [`${t.problemId}/${t.sample}`, t]));
    for (const sample of [0, 1]) {
      expect(byKey.get(`P1/${sample}`)?.toolCalls[0]?.outcome).toMatchObject({
        status: 'ok',
        stdout: '42\n',
      });
      expect(byKey.get(`P3/${sample}`)?.toolCalls.map((call) => call.outcome)).toEqual([
        expect.objectContaining({ status: 'error', exception: expect.stringContaining('SyntaxError') }),
        expect.objectContaining({ status: 'ok', stdout: '7\n' }),
      ]);
      expect(byKey.get(`P1/${sample}`)?.meta).toMatchObject({
        reference: '42',
        correct: true,
        extracted: '42',
      });
      expect(byKey.get(`P2/${sample}`)?.meta).toMatchObject({
        reference: '4',
        correct: false,
        extracted: '5',
        reason: 'mismatch',
      });
      expect(byKey.get(`P3/${sample}`)?.meta).toMatchObject({
        reference: '7',
        correct: true,
        extracted: '7',
      });
    }

    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({
      k: 2,
      problems: 3,
      trajectories: 6,
      expectedTrajectories: 6,
      complete: true,
    });
    // Correct samples: P1 2/2, P2 0/2, P3 2/2.
    expect(summary.perProblem.map((problem: { correct: number }) => problem.correct)).toEqual([2, 0, 2]);
    expect(summary.avgAtK).toBeCloseTo(2 / 3, 12);
    // pass@1 = mean(1, 0, 1); pass@2 with n=2: 1 - C(2-c, 2)/C(2, 2) = 1, 0, 1.
    expect(summary.passAtK).toEqual({ 1: expect.closeTo(2 / 3, 12), 2: expect.closeTo(2 / 3, 12) });
    // Votes: 42 ✓, 5 ✗, 7 ✓.
    expect(
      summary.perProblem.map((problem: { majority: { answer: string } }) => problem.majority.answer),
    ).toEqual(['42', '5', '7']);
    expect(summary.majAtK).toBeCloseTo(2 / 3, 12);
    // Calls: P1 1 + 1, P2 0, P3 2 + 2 = 6 over 6 trajectories; 4 use code; the 2 calls of `(`
    // fail; both trajectories with a failure recover.
    expect(summary.toolUse).toEqual({
      trajectories: 6,
      codeCalls: 6,
      codeCallsPerTrajectory: 1,
      codeUsageRate: 4 / 6,
      codeErrorRate: 2 / 6,
      trajectoriesWithError: 2,
      selfCorrected: 2,
      selfCorrectionRate: 1,
    });
    expect(summary.finishReasons).toEqual({ answer: 6 });
    // Response lengths in tokens (model + interpreter), each problem twice; nearest rank.
    const lengths = expected
      .flatMap((sequence) => Array(2).fill(sequence.inputIds.length - sequence.promptLength) as number[])
      .sort((a, b) => a - b);
    expect(summary.length).toEqual({
      unit: 'tokens',
      mean: expect.closeTo(lengths.reduce((total, value) => total + value, 0) / 6, 12),
      p50: lengths[2],
      p90: lengths[5],
      max: lengths[5],
    });

    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    expect(config).toMatchObject({
      k: 2,
      prompt: 'problem-only',
      engine: {
        api: 'sglang',
        url: 'embedded',
        model: join(folder, '.agentmath', 'models', 'arith-tool', 'model'),
      },
    });
    expect(result.stdout).toContain('avg@2 66.7%  pass@1 66.7%  pass@2 66.7%  maj@2 66.7%  code/traj 1.00');
  }, 120_000);
});
