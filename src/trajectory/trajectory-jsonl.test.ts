import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendModelSegment, createTrajectory, finishTrajectory } from '../../test/trajectory-builder.ts';
import type { Trajectory } from './trajectory.ts';
import { InvalidTrajectoryError } from './trajectory-file-error.ts';
import { openTrajectoryWriter, readTrajectories, readTrajectoryLines } from './trajectory-jsonl.ts';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'agentmath-jsonl-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

function sample(index: number, text = `answer \\boxed{${index}} ünïcödé ∑`): Trajectory {
  const ids = [...Buffer.from(text)];
  const running = appendModelSegment(
    createTrajectory({
      id: `t${index}`,
      problemId: `p${index}`,
      sample: index,
      dialect: 'markdown',
      prompt: { text: 'q', tokenIds: [113] },
    }),
    {
      text,
      tokenIds: ids,
      logprobs: ids.map(() => -0.25),
      finishReason: 'stop',
      matchedStop: null,
      policyVersion: 1,
    },
    7,
  );
  return finishTrajectory(running, { reason: 'answer' });
}

async function collect(file: string, options = {}): Promise<Trajectory[]> {
  const out: Trajectory[] = [];
  for await (const trajectory of readTrajectories(file, options)) out.push(trajectory);
  return out;
}

describe('trajectory JSONL', () => {
  it('round-trips through the writer and the streaming reader, across read chunks', async () => {
    const file = join(directory, 'runs.jsonl');
    const written = [sample(0), sample(1, 'x'.repeat(150_000)), sample(2)];
    const writer = await openTrajectoryWriter(file);
    await Promise.all(written.map((trajectory) => writer.append(trajectory)));
    await writer.close();
    expect((await readFile(file, 'utf8')).split('\n')).toHaveLength(4);
    expect(await collect(file)).toEqual(written);
    const lines: number[] = [];
    for await (const { line } of readTrajectoryLines(file)) lines.push(line);
    expect(lines).toEqual([1, 2, 3]);
  });

  it('names the file, line and field of a bad record', async () => {
    const file = join(directory, 'bad.jsonl');
    const broken = structuredClone(sample(1)) as unknown as { segments: { tokenIds: number[] }[] };
    broken.segments[0]!.tokenIds[5] = -3;
    await writeFile(file, `${JSON.stringify(sample(0))}\n\n${JSON.stringify(broken)}\n`);
    const error = await collect(file).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(InvalidTrajectoryError);
    expect((error as Error).message).toBe(
      `${file} line 3: segments.0.tokenIds.5: expected nonnegative integer`,
    );
    expect(error).toMatchObject({ code: 'TRAJECTORY_INVALID', line: 3, field: 'segments.0.tokenIds.5' });
  });

  it('names missing fields and bad JSON', async () => {
    const file = join(directory, 'bad.jsonl');
    const { answer: _dropped, ...missing } = sample(0);
    await writeFile(file, `${JSON.stringify(missing)}\n`);
    await expect(collect(file)).rejects.toThrow(`${file} line 1: answer: missing (expected string)`);
    await writeFile(file, `${JSON.stringify(sample(0))}\n{"id": \n${JSON.stringify(sample(1))}\n`);
    await expect(collect(file)).rejects.toThrow(/line 2: not valid JSON/);
  });

  it('rejects a truncated last line unless told to tolerate it, then warns', async () => {
    const file = join(directory, 'crash.jsonl');
    const line = JSON.stringify(sample(1));
    await writeFile(file, `${JSON.stringify(sample(0))}\n${line.slice(0, 120)}`);
    await expect(collect(file)).rejects.toThrow(/line 2: not valid JSON/);
    const warnings: string[] = [];
    const read = await collect(file, {
      tolerateTruncatedLastLine: true,
      onWarning: (message: string) => warnings.push(message),
    });
    expect(read.map((trajectory) => trajectory.id)).toEqual(['t0']);
    expect(warnings).toEqual([`${file} line 2: skipped a truncated last line (120 characters, no newline)`]);
  });

  it('still rejects a bad line in the middle in tolerant mode', async () => {
    const file = join(directory, 'middle.jsonl');
    await writeFile(file, `{"id": \n${JSON.stringify(sample(0))}\n`);
    await expect(collect(file, { tolerateTruncatedLastLine: true })).rejects.toThrow(
      /line 1: not valid JSON/,
    );
  });

  it('a reopened writer removes a cut-off last line, so the file stays readable', async () => {
    const file = join(directory, 'resume.jsonl');
    await writeFile(file, `${JSON.stringify(sample(0))}\n${JSON.stringify(sample(1)).slice(0, 50)}`);
    const warnings: string[] = [];
    const writer = await openTrajectoryWriter(file, { onWarning: (message) => warnings.push(message) });
    await writer.append(sample(2));
    await writer.close();
    expect((await collect(file)).map((trajectory) => trajectory.id)).toEqual(['t0', 't2']);
    expect(warnings).toEqual([`${file}: removed a truncated last line (50 bytes, no newline)`]);
    await expect(writer.append(sample(3))).rejects.toMatchObject({ code: 'TRAJECTORY_WRITER_CLOSED' });
  });

  it('the writer refuses an invalid trajectory and writes nothing for it', async () => {
    const file = join(directory, 'refuse.jsonl');
    const writer = await openTrajectoryWriter(file);
    const bad = { ...sample(0), sample: -1 };
    await expect(writer.append(bad)).rejects.toThrow(`${file}: sample:`);
    await writer.append(sample(1));
    await writer.close();
    expect((await collect(file)).map((trajectory) => trajectory.id)).toEqual(['t1']);
  });
});
