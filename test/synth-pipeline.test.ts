/**
 * The synthesis pipeline end to end with a scripted teacher (real OpenAI chat wire format)
 * and the real jailed sandbox: one input record per behaviour, so every stage and every drop
 * reason shows in stats.json, and the outputs (trajectories.jsonl, sharegpt.json,
 * verl.parquet) read back, also through `train sft --data`'s reader.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalSandboxPool } from '../src/sandbox/index.ts';
import { OpenAiTeacher, runSynth, type SynthConfigInput } from '../src/synth/index.ts';
import { readSftDataFile } from '../src/train/sft-data-file.ts';
import { readTrajectories, type Trajectory } from '../src/trajectory/index.ts';
import { openTestSandbox } from './agent-sandbox.ts';
import { type ScriptedTeacher, startScriptedTeacher } from './fixtures/scripted-teacher-server.ts';

const block = (code: string, output: string) =>
  `<code>\n${code}\n</code>\n<interpreter>\n${output}\n</interpreter>\n`;
const end = (answer: string) => `</think>\nThe answer is \\boxed{${answer}}.`;

/** What the teacher rewrites each problem into, by the tag in its statement. */
const REWRITES: Record<string, string> = {
  clean: `<think>Multiply. ${block('print(123 * 456)', '56088')}The interpreter printed it.${end('56088')}`,
  fences: `<think>Multiply.\n\`\`\`python\nprint(123 * 456)\n\`\`\`\n\`\`\`output\n56088\n\`\`\`\nDone.${end('56088')}`,
  stray: `<think>Multiply </code> ${block('print(123 * 456)', '56088')}${end('56088')}`,
  noanswer: `<think>Multiply. ${block('print(123 * 456)', '56088')}</think>\nThe answer is 56088.`,
  fails: `<think>Multiply. ${block('pritn(123 * 456)', '56088')}It printed the product.${end('56088')}`,
  mismatch: `<think>Multiply. ${block('print(123 * 456)', '56089')}So the product is 56089.${end('56089')}`,
  holds: `<think>Multiply. ${block('print(123 * 456)', '56089')}The interpreter printed the product.${end('56088')}`,
  judged: `<think>Check. ${block("print('even')", 'odd')}The parity settles it.${end('56088')}`,
  trivial: `<think>Warm up: ${block('print(2 + 3)', '5')}Now multiply. ${block('print(123 * 456)', '56088')}Done.${end('56088')}`,
  wrong: `<think>Multiply. ${block('print(123 * 456)', '56088')}Add one: 56089.${end('56089')}`,
  outage: 'never sent',
  contaminated: `<think>${block('print(1)', '1')}${end('1')}`,
};

function reply(content: string): string {
  if (content.includes('HOLDS or BROKEN')) return 'BROKEN';
  if (content.includes('a block failed')) {
    return `The name is misspelt. ${block('print(123 * 456)', '56088')}Now it printed the product.${end('56088')}`;
  }
  if (content.includes('printed the one shown at the end'))
    return `So the product is as printed.${end('56088')}`;
  const tag = Object.keys(REWRITES).find((name) => content.includes(`[${name}]`));
  return tag === undefined ? 'unknown' : REWRITES[tag]!;
}

async function allTrajectories(file: string): Promise<Trajectory[]> {
  const trajectories: Trajectory[] = [];
  for await (const trajectory of readTrajectories(file)) trajectories.push(trajectory);
  return trajectories;
}

const BENCH_PROBLEM =
  'Let ABCD be a tetrahedron such that every face is congruent to every other face of it.';

describe('synth run with a scripted teacher and the real sandbox', () => {
  let teacherServer: ScriptedTeacher;
  let sandbox: LocalSandboxPool;
  let dir: string;
  let config: SynthConfigInput;

  beforeAll(async () => {
    teacherServer = await startScriptedTeacher(reply);
    teacherServer.faultFor = (content) => (content.includes('[outage]') ? { kind: '500' } : null);
    sandbox = await openTestSandbox();
    dir = await mkdtemp(join(tmpdir(), 'synth-pipeline-'));
    const input = join(dir, 'input.jsonl');
    const rows = Object.keys(REWRITES).map((name) => ({
      id: name,
      problem: name === 'contaminated' ? `[${name}] ${BENCH_PROBLEM}` : `[${name}] What is 123 * 456?`,
      solution: '123 * 456 = 56088. \\boxed{56088}',
      answer: '56088',
    }));
    await writeFile(input, `${rows.map((row) => JSON.stringify(row)).join('\n')}\n{"id": "broken"\n`);
    const bench = join(dir, 'bench.jsonl');
    await writeFile(bench, `${JSON.stringify({ id: 'x-1', problem: BENCH_PROBLEM })}\n`);
    config = {
      input,
      teacher: teacherServer.url,
      model: 'scripted',
      fields: { id: 'id', problem: 'problem', solution: 'solution', answer: 'answer' },
      decontaminate: [bench],
      dataDir: null,
      concurrency: 3,
    };
  }, 60_000);

  afterAll(async () => {
    await sandbox?.close();
    await teacherServer?.close();
  });

  const teacher = () =>
    new OpenAiTeacher({ baseUrl: teacherServer.url, model: 'scripted', maxRetries: 1, baseDelayMs: 1 });

  it('keeps, repairs, corrects and drops each record for its own reason', async () => {
    const out = join(dir, 'all');
    const stats = await runSynth({ dir: out, config, teacher: teacher(), sandbox });
    const reasons = Object.fromEntries(
      Object.entries(stats.dropped).flatMap(([stage, byReason]) =>
        Object.entries(byReason).map(([reason, { ids }]) => [`${stage}/${reason}`, ids.sort()]),
      ),
    );
    expect(reasons).toEqual({
      'decontaminate/benchmark-overlap': ['contaminated'],
      'format/format-unrepairable': ['stray'],
      'format/no-answer': ['noanswer'],
      'alignment/feedback-mismatch': ['judged', 'mismatch'],
      'answer/wrong-answer': ['wrong'],
    });
    expect(stats.kept).toBe(5);
    // An outage is not a result: counted apart, with its cause, and retried by --resume.
    expect(stats.outages).toEqual({
      count: 1,
      ids: ['outage'],
      causes: { 'teacher-unavailable: HTTP 500: {"error":{"message":"internal error"}}': 1 },
    });
    expect(stats.inputSkipped.rows).toEqual([expect.objectContaining({ line: 13, field: null })]);
    expect(stats.repairs).toMatchObject({
      'markdown-code': 1,
      'self-corrected': 1,
      'output-replaced': 1,
      'trivial-call-to-text': 1,
    });
    // The judge was asked only for the non-numeric mismatch; numbers follow the rule.
    const judged = teacherServer.requests.filter((request) => request.content.includes('HOLDS or BROKEN'));
    expect(judged).toHaveLength(1);
    expect(judged[0]?.content).toContain('even');

    const trajectories = await allTrajectories(join(out, 'trajectories.jsonl'));
    const byId = new Map(trajectories.map((trajectory) => [trajectory.problemId, trajectory]));
    expect([...byId.keys()].sort()).toEqual(['clean', 'fails', 'fences', 'holds', 'trivial']);
    const holds = byId.get('holds')!;
    expect(holds.toolCalls[0]?.outcome).toMatchObject({ status: 'ok', stdout: '56088\n' });
    expect(holds.segments.map((segment) => segment.kind)).toEqual(['model', 'tool', 'model']);
    expect(holds.segments[1]?.text).toContain('56088');
    expect(holds.segments[1]?.text).not.toContain('56089');
    const fails = byId.get('fails')!;
    expect(fails.toolCalls.map((call) => call.outcome.status)).toEqual(['error', 'ok']);
    expect(fails.segments[1]?.text).toContain('NameError');
    const trivial = byId.get('trivial')!;
    expect(trivial.toolCalls.map((call) => call.code)).toEqual(['print(123 * 456)']);
    expect(trivial.segments[0]?.text).toContain('2 + 3 = 5');

    const sharegpt = JSON.parse(await readFile(join(out, 'sharegpt.json'), 'utf8')) as {
      conversations: { from: string }[];
    }[];
    expect(sharegpt).toHaveLength(5);
    expect(sharegpt.every((record) => record.conversations[0]?.from === 'human')).toBe(true);
    expect(sharegpt.some((record) => record.conversations.some((turn) => turn.from === 'observation'))).toBe(
      true,
    );
    const bytes = await readFile(join(out, 'verl.parquet'));
    const rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    });
    expect(rows.map((row) => row.id).sort()).toEqual(['clean', 'fails', 'fences', 'holds', 'trivial']);
    expect(JSON.parse(String(rows[0]?.reward_model))).toEqual({ style: 'rule', ground_truth: '56088' });
    for (const file of ['trajectories.jsonl', 'sharegpt.json', 'verl.parquet']) {
      const solutions = await readSftDataFile(join(out, file));
      expect(solutions).toHaveLength(5);
      expect(
        solutions.flatMap((solution) => solution.segments).some((segment) => segment.kind === 'tool'),
      ).toBe(true);
    }
    const unmasked = await readSftDataFile(join(out, 'trajectories.jsonl'), { maskToolOutput: false });
    expect(
      unmasked.flatMap((solution) => solution.segments).every((segment) => segment.kind === 'model'),
    ).toBe(true);
    expect(stats.teacher.requests).toBeGreaterThan(0);
    expect(stats.toolCallsPerSample.max).toBe(2);
  }, 120_000);

  it('without self-correction drops failing code, and regenerates a broken continuation on request', async () => {
    const stats = await runSynth({
      dir: join(dir, 'regenerate'),
      config: {
        ...config,
        stages: ['format', 'executability', 'alignment', 'rationality', 'answer'],
        onMismatch: 'regenerate',
        trivial: 'drop',
      },
      teacher: teacher(),
      sandbox,
    });
    expect(stats.dropped.executability?.['code-failed']?.ids).toEqual(['fails']);
    // `print(1)` and `print('even')` are trivial too (one line, no large constant).
    expect(stats.dropped.rationality?.['trivial-code']?.ids.sort()).toEqual([
      'contaminated',
      'judged',
      'trivial',
    ]);
    // `mismatch` is kept with a regenerated continuation (`judged` was too, then dropped as trivial).
    expect(stats.repairs['continuation-regenerated']).toBe(1);
    expect(stats.dropped.alignment).toBeUndefined();
    expect(stats.dropped.decontaminate).toBeUndefined();
  }, 120_000);

  it('unrefined keeps the teacher text and says the code never ran', async () => {
    const stats = await runSynth({
      dir: join(dir, 'raw'),
      config: { ...config, stages: [] },
      teacher: teacher(),
      sandbox,
    });
    expect(Object.keys(stats.dropped)).toEqual([]);
    expect(stats.outages.ids).toEqual(['outage']);
    const trajectories = await allTrajectories(join(dir, 'raw', 'trajectories.jsonl'));
    const mismatch = trajectories.find((trajectory) => trajectory.problemId === 'mismatch')!;
    expect(mismatch.toolCalls[0]?.outcome).toMatchObject({
      status: 'killed',
      reason: expect.stringContaining('not executed'),
    });
    expect(mismatch.segments[1]?.text).toContain('56089');
  }, 120_000);

  it('refuses to resume with a different configuration, or to reuse a folder without --resume', async () => {
    const out = join(dir, 'all');
    await expect(runSynth({ dir: out, config, teacher: teacher(), sandbox })).rejects.toThrow(
      /already holds an `agentmath synth run` run/,
    );
    await expect(
      runSynth({ dir: out, config: { ...config, ngram: 5 }, resume: true, teacher: teacher(), sandbox }),
    ).rejects.toThrow(/cannot resume .*\n {2}ngram: saved 8, now 5/);
  });
});
