import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readStageState, recordStageFinish, recordStageStart, stageRecordPath } from './stage-record.ts';

const folder = mkdtempSync(join(tmpdir(), 'agentmath-stage-record-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const inputs = { model: '/models/base', made: '2026-11-27T10:00:00.000Z', count: 50 };
const startedAt = new Date('2026-11-27T12:00:00.000Z');

describe('stage records', () => {
  it('say new, then interrupted once started, then finished with the finish time and wall time', async () => {
    const outDir = join(folder, 'run-a');
    expect(await readStageState(outDir, 'sft', inputs)).toEqual({ status: 'new' });
    await recordStageStart(outDir, 'sft', inputs, startedAt);
    expect((await readStageState(outDir, 'sft', inputs)).status).toBe('interrupted');
    const finishedAt = await recordStageFinish(outDir, 'sft', inputs, {
      startedAt,
      now: new Date('2026-11-27T12:05:00.000Z'),
      wallMs: 300_000,
    });
    expect(finishedAt).toBe('2026-11-27T12:05:00.000Z');
    const state = await readStageState(outDir, 'sft', inputs);
    expect(state).toMatchObject({ status: 'finished', record: { finishedAt, wallMs: 300_000 } });
  });

  it('treat a record of other inputs (an upstream stage that ran again, another count) as new', async () => {
    const outDir = join(folder, 'run-b');
    await recordStageStart(outDir, 'eval-sft', inputs, startedAt);
    await recordStageFinish(outDir, 'eval-sft', inputs, { startedAt, now: startedAt, wallMs: 1 });
    expect(
      (await readStageState(outDir, 'eval-sft', { ...inputs, made: '2026-11-27T13:00:00.000Z' })).status,
    ).toBe('new');
    expect((await readStageState(outDir, 'eval-sft', { ...inputs, count: 60 })).status).toBe('new');
    expect((await readStageState(outDir, 'eval-sft', { ...inputs })).status).toBe('finished');
  });

  it('treat an unreadable record as new', async () => {
    const outDir = join(folder, 'run-c');
    await recordStageStart(outDir, 'rl', inputs, startedAt);
    writeFileSync(stageRecordPath(outDir, 'rl'), '{"stage": "rl", "inp');
    expect(await readStageState(outDir, 'rl', inputs)).toEqual({ status: 'new' });
  });
});
