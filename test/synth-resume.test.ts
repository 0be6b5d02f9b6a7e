/**
 * `agentmath synth run` killed with SIGKILL mid-run and continued with `--resume`: no record
 * lost, none written twice, and no teacher request whose answer was journaled is sent again
 * (counted at the scripted server).
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killAllClis, killGroup, startCli } from './cli-process.ts';
import { startScriptedTeacher } from './fixtures/scripted-teacher-server.ts';

const RECORDS = 14;
const rewrite =
  '<think>Multiply. <code>\nprint(123 * 456)\n</code>\n<interpreter>\n56088\n</interpreter>\nDone.</think>\nThe answer is \\boxed{56088}.';

async function lines(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter((line) => line.trim() !== '');
}

describe('synth run: kill -9 and --resume', () => {
  afterAll(() => killAllClis());

  it('finishes every record exactly once without repeating a journaled request', async () => {
    const server = await startScriptedTeacher(() => rewrite);
    server.delayMs = 250;
    try {
      const dir = await mkdtemp(join(tmpdir(), 'synth-resume-'));
      const input = join(dir, 'input.jsonl');
      const ids = Array.from({ length: RECORDS }, (_, index) => `r${index}`);
      await writeFile(
        input,
        ids
          .map((id) =>
            JSON.stringify({
              id,
              problem: `[${id}] What is 123 * 456?`,
              solution: 'It is 56088. \\boxed{56088}',
              answer: '56088',
            }),
          )
          .join('\n'),
      );
      const out = join(dir, 'out');
      const args = [
        'synth',
        'run',
        '--input',
        input,
        '--teacher',
        server.url,
        '--model',
        'scripted',
        '--out',
        out,
        '--concurrency',
        '2',
      ];
      const first = startCli(args, { cwd: dir });
      const deadline = Date.now() + 120_000;
      while ((await lines(join(out, 'records.jsonl'))).length < 4 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      killGroup(first.child);
      await first.done;
      const journaled = new Set(
        (await lines(join(out, 'teacher-journal.jsonl'))).flatMap((line) => {
          try {
            return [(JSON.parse(line) as { recordId: string }).recordId];
          } catch {
            return [];
          }
        }),
      );
      const doneBefore = (await lines(join(out, 'records.jsonl'))).length;
      expect(doneBefore).toBeGreaterThanOrEqual(4);
      expect(doneBefore).toBeLessThan(RECORDS);
      const requestsBefore = server.requests.length;

      const second = await startCli([...args, '--resume'], { cwd: dir }).done;
      expect(second.code, second.stderr).toBe(0);
      const resent = server.requests
        .slice(requestsBefore)
        .filter((request) => [...journaled].some((id) => request.content.includes(`[${id}]`)));
      expect(resent).toEqual([]);

      const records = (await lines(join(out, 'records.jsonl'))).map(
        (line) => JSON.parse(line) as { id: string; status: string },
      );
      expect(records.map((record) => record.id).sort()).toEqual([...ids].sort());
      expect(records.every((record) => record.status === 'kept')).toBe(true);
      const trajectories = (await lines(join(out, 'trajectories.jsonl'))).map(
        (line) => JSON.parse(line) as { problemId: string },
      );
      expect(trajectories.map((trajectory) => trajectory.problemId).sort()).toEqual([...ids].sort());
      const stats = JSON.parse(await readFile(join(out, 'stats.json'), 'utf8')) as {
        kept: number;
        teacher: { requests: number };
      };
      expect(stats.kept).toBe(RECORDS);
      expect(stats.teacher.requests).toBe(RECORDS);
    } finally {
      await server.close();
    }
  }, 240_000);
});
