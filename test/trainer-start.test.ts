/**
 * Starting trainer ranks as a careful user meets it, on CPU with a random-init Qwen3 from
 * `model init`: a rank count beyond the machine refused before anything starts, a failed start
 * that says the rank's own error first, a SIGTERM during start-up that stops it at once, and a
 * killed CLI whose torchrun (waiting in a rendezvous that never completes) exits with it.
 * Every process a test starts is killed by it.
 */
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initHfModel } from '../src/model/index.ts';
import { startTrainerService, TrainerStartError } from '../src/train/index.ts';
import { killAllClis, killGroup, startCli } from './cli-process.ts';
import { alive, descendantsOf } from './process-tree.ts';

let folder: string;
let model: string;
let data: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'agentmath-trainer-start-'));
  model = join(folder, 'qwen3');
  data = join(folder, 'arith.jsonl');
  await initHfModel({ arch: 'qwen3', out: model, hidden: 32, seed: 5 });
  const written = await startCli(
    ['tasks', 'write-arith', '--out', data, '--count', '8', '--levels', '1', '--style', 'text'],
    { cwd: folder },
  ).done;
  expect(written.code, written.stderr).toBe(0);
}, 300_000);

afterAll(async () => {
  killAllClis();
  await rm(folder, { recursive: true, force: true });
});

const commandLine = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
};

/** Polls until `predicate` holds or `limitMs` passed; whether it held. */
async function eventually(predicate: () => boolean, limitMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  while (!predicate()) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

function killAll(pids: number[]): void {
  for (const pid of alive(pids)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

describe('a rank count beyond the machine', () => {
  const tooMany = String(availableParallelism() + 1);
  const refusals = () => [
    {
      name: 'trainer serve --nproc',
      flag: '--nproc',
      args: ['trainer', 'serve', '--model', model, '--nproc', tooMany],
    },
    {
      name: 'train sft --model --nproc',
      flag: '--nproc',
      args: [
        'train',
        'sft',
        '--model',
        model,
        '--data',
        data,
        '--out',
        join(folder, 'sft-refused'),
        '--nproc',
        tooMany,
      ],
    },
    {
      name: 'train rl --model --trainer-procs',
      flag: '--trainer-procs',
      args: [
        'train',
        'rl',
        '--model',
        model,
        '--out',
        join(folder, 'rl-refused'),
        '--trainer-procs',
        tooMany,
      ],
    },
  ];

  it('is refused before anything starts (exit 2, the option and the override named, nothing written)', async () => {
    for (const { name, flag, args } of refusals()) {
      const run = startCli(args, { cwd: folder, limitMs: 60_000, keepGroupOnExit: true });
      const seen = new Set<number>();
      const watcher = setInterval(() => {
        for (const pid of descendantsOf(run.child.pid!)) seen.add(pid);
      }, 20);
      const result = await run.done;
      clearInterval(watcher);
      expect(result.code, `${name}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(`${flag} ${tooMany}: ${tooMany} trainer processes need one core each`);
      expect(result.stderr).toContain('--no-capacity-check');
      expect([...seen].map(commandLine).filter((line) => line.includes('python'))).toEqual([]);
    }
    expect(existsSync(join(folder, 'sft-refused'))).toBe(false);
    expect(existsSync(join(folder, 'rl-refused'))).toBe(false);
  }, 120_000);
});

describe('a failed start', () => {
  let busy: Server;
  afterAll(() => busy?.close());

  it("names the rank's own error first: a truncated model.safetensors, a missing model folder, a port in use", async () => {
    const truncated = join(folder, 'truncated');
    mkdirSync(truncated);
    for (const name of readdirSync(model)) copyFileSync(join(model, name), join(truncated, name));
    const weights = readFileSync(join(model, 'model.safetensors'));
    writeFileSync(join(truncated, 'model.safetensors'), weights.subarray(0, Math.floor(weights.length / 2)));
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    const failures = await Promise.all(
      [{ model: truncated }, { model: join(folder, 'no-such-model') }, { model, port }].map((options) =>
        startTrainerService(options).then(
          async (service) => {
            await service.stop();
            return null;
          },
          (error: unknown) => error,
        ),
      ),
    );
    for (const failure of failures) expect(failure).toBeInstanceOf(TrainerStartError);
    const firstLines = failures.map((failure) => (failure as Error).message.split('\n')[0]);
    expect(firstLines[0]).toMatch(/before it listened: rank 0: \w*(Error|Exception): .*/);
    expect(firstLines[0]).toMatch(/safetensors|header|deserializ/i);
    expect(firstLines[1]).toMatch(
      /before it listened: rank 0: FileNotFoundError: .*no-such-model.*no config\.json/,
    );
    expect(firstLines[2]).toMatch(
      new RegExp(
        `before it listened: rank 0: OSError: cannot listen on 127\\.0\\.0\\.1:${port}: Address already in use`,
      ),
    );
  }, 300_000);
});

describe('signals and a killed launcher during start-up', () => {
  it('SIGTERM while the trainer starts: train sft --model stops at once, before any step, leaving nothing running', async () => {
    const out = join(folder, 'sft-stopped');
    const run = startCli(['train', 'sft', '--model', model, '--data', data, '--out', out, '--steps', '4'], {
      cwd: folder,
      limitMs: 300_000,
      keepGroupOnExit: true,
    });
    const seen = new Set<number>();
    const watcher = setInterval(() => {
      for (const pid of descendantsOf(run.child.pid!)) seen.add(pid);
    }, 20);
    try {
      // One process (--nproc 1) is started without torchrun: `python -m agentmath_train serve`.
      const starting = await eventually(() =>
        [...seen].some((pid) => commandLine(pid).includes('agentmath_train')),
      );
      expect(starting, 'the trainer never started').toBe(true);
      process.kill(run.child.pid!, 'SIGTERM');
      const result = await run.done;
      expect(result.signal, result.stderr).toBe('SIGTERM');
      expect(result.stderr).toContain('TRAINER_START_STOPPED');
      // Stopped before a step: no metrics line, no checkpoint.
      expect(existsSync(join(out, 'metrics.jsonl'))).toBe(false);
      expect(existsSync(join(out, 'checkpoints'))).toBe(false);
      expect(await eventually(() => alive([...seen]).length === 0, 30_000), 'processes left').toBe(true);
    } finally {
      clearInterval(watcher);
      killGroup(run.child);
      killAll([...seen]);
    }
  }, 300_000);

  it('kill -9 of trainer serve while torchrun waits in a rendezvous: torchrun ends with it', async () => {
    // Node 0 of two: its torchrun waits for node 1, which never comes.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const rendezvousPort = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const run = startCli(
      [
        'trainer',
        'serve',
        '--model',
        model,
        '--nnodes',
        '2',
        '--node-rank',
        '0',
        '--rdzv-endpoint',
        `127.0.0.1:${rendezvousPort}`,
        '--rdzv-id',
        'never-complete',
      ],
      { cwd: folder, limitMs: 300_000, keepGroupOnExit: true },
    );
    let torchrun: number[] = [];
    try {
      const waiting = await eventually(() => {
        torchrun = descendantsOf(run.child.pid!).filter((pid) =>
          commandLine(pid).includes('agentmath_train.torchrun'),
        );
        return torchrun.length > 0;
      });
      expect(waiting, 'torchrun never started').toBe(true);
      await sleep(2_000); // in the rendezvous (torch imported)
      process.kill(run.child.pid!, 'SIGKILL');
      await run.done;
      expect(await eventually(() => alive(torchrun).length === 0, 30_000), 'torchrun outlived the CLI').toBe(
        true,
      );
    } finally {
      killGroup(run.child);
      killAll(torchrun);
    }
  }, 300_000);
});
