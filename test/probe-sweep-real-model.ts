/**
 * The real-model probes for `scripts/probe-sweep.sh`:
 * `trainer serve`, `train sft --model`, `engine serve --model` and `model init` with a tiny
 * random-init Qwen3 (made once, on the first probe that needs it), as a careful user meets
 * them — too many ranks, a signal or kill -9 during start-up, a zombie holding a run lock,
 * malformed batches, broken model folders, auth mistakes, a hub-style weight path.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { initHfModel } from '../src/model/index.ts';
import { processStartTime, RUN_LOCK_FILE } from '../src/shared/run-folder-lock.ts';
import { encodeTrainerBatch } from '../src/train/index.ts';
import type { Outcome, Probe } from './probe-sweep.ts';
import { descendantsOf } from './process-tree.ts';

const CLI = join(dirname(dirname(fileURLToPath(import.meta.url))), 'bin', 'agentmath.js');

/** What the sweep already has: its work folder, its run folders and its `rollout` command line. */
export type RealModelProbeContext = {
  work: string;
  out: (name: string) => string;
  rollout: (name: string, engine: string, extra?: string[]) => string[];
};

export function realModelProbes({ work, out, rollout }: RealModelProbeContext): Probe[] {
  const root = join(work, 'real-model');
  const model = join(root, 'qwen3');
  const data = join(root, 'arith.jsonl');
  const truncated = join(root, 'truncated');
  const noTokenizer = join(root, 'no-tokenizer');
  const run = (name: string) => join(root, 'runs', name);
  let made: Promise<void> | null = null;
  /** The model, its broken copies and the SFT data, made once. */
  const ensureModel = () => {
    made ??= (async () => {
      mkdirSync(root, { recursive: true });
      await initHfModel({ arch: 'qwen3', out: model, hidden: 32, seed: 7 });
      for (const copy of [truncated, noTokenizer]) {
        mkdirSync(copy);
        for (const name of readdirSync(model)) copyFileSync(join(model, name), join(copy, name));
      }
      const weights = readFileSync(join(model, 'model.safetensors'));
      writeFileSync(join(truncated, 'model.safetensors'), weights.subarray(0, weights.length >> 1));
      for (const name of ['tokenizer.json', 'tokenizer_config.json']) rmSync(join(noTokenizer, name));
      execFileSync(process.execPath, [
        CLI,
        'tasks',
        'write-arith',
        '--out',
        data,
        '--count',
        '8',
        '--levels',
        '1',
      ]);
    })();
    return made;
  };
  const tooMany = String(availableParallelism() + 1);
  const sft = (name: string, extra: string[] = [], from = model) => [
    'train',
    'sft',
    '--model',
    from,
    '--data',
    data,
    '--out',
    run(name),
    '--steps',
    '4',
    ...extra,
  ];
  const stderrMatches = (pattern: RegExp) => (outcome: Outcome) =>
    pattern.test(outcome.stderr) ? [] : [`stderr does not match ${pattern}`];
  const commandOf = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  /** Resolves once a torchrun started by `child` runs (or after a minute). */
  const torchrunStarted = async (child: ChildProcess) => {
    for (let waited = 0; waited < 60_000; waited += 100) {
      if (descendantsOf(child.pid!).some((pid) => commandOf(pid).includes('agentmath_train.torchrun')))
        return;
      await sleep(100);
    }
  };
  /** The first line of `stream` matching `pattern` (its first group), or null after `limitMs`. */
  const lineOf = (stream: NodeJS.ReadableStream | null, pattern: RegExp, limitMs = 170_000) =>
    new Promise<string | null>((resolve) => {
      let text = '';
      const timer = setTimeout(() => resolve(null), limitMs);
      stream?.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const match = pattern.exec(text);
        if (match !== null) {
          clearTimeout(timer);
          resolve(match[1] ?? match[0]);
        }
      });
    });
  const stop = (child: ChildProcess, name: NodeJS.Signals = 'SIGTERM') => {
    try {
      process.kill(child.pid!, name);
    } catch {
      // it ended before the signal
    }
  };
  const answers: string[] = [];
  let zombieParent: ChildProcess | null = null;
  let rendezvousPort = 0;

  return [
    // Item 4: ranks beyond the machine, and a killed launcher during start-up.
    {
      name: 'trainer serve --nproc beyond the cores',
      group: 'real-model',
      setup: ensureModel,
      args: () => ['trainer', 'serve', '--model', model, '--nproc', tooMany],
      expect: { code: 2 },
      check: stderrMatches(new RegExp(`--nproc ${tooMany}: .*one core each.*--no-capacity-check`)),
    },
    {
      name: 'train sft --model --nproc beyond the cores',
      group: 'real-model',
      setup: ensureModel,
      args: () => sft('too-many', ['--nproc', tooMany]),
      expect: { code: 2 },
      absent: () => [run('too-many')],
    },
    {
      name: 'trainer serve: kill -9 while torchrun waits in a rendezvous',
      group: 'real-model',
      setup: async () => {
        await ensureModel();
        rendezvousPort = await freePort();
      },
      args: () => [
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
        'probe-never-complete',
      ],
      during: async (child) => {
        await torchrunStarted(child);
        await sleep(2_000);
        stop(child, 'SIGKILL');
      },
      expect: { signal: 'SIGKILL' },
      limitMs: 120_000,
    },
    // Item 5: the first SIGTERM during start-up stops it.
    {
      name: 'train sft --model: SIGTERM while the trainer starts',
      group: 'real-model',
      setup: ensureModel,
      args: () => sft('sigterm-at-start'),
      during: async (child) => {
        await torchrunStarted(child);
        stop(child);
      },
      expect: { signal: 'SIGTERM' },
      absent: () => [
        join(run('sigterm-at-start'), 'metrics.jsonl'),
        join(run('sigterm-at-start'), 'checkpoints'),
      ],
      limitMs: 120_000,
    },
    // Item 6: a zombie holding the run lock is dead.
    {
      name: 'rollout --resume: the lock holder is a zombie',
      group: 'real-model',
      setup: async () => {
        const args = rollout('zombie-lock', 'http://127.0.0.1:1');
        try {
          execFileSync(process.execPath, [CLI, ...args], { stdio: 'ignore' });
        } catch {
          // exit 1: the engine refused; the run folder exists
        }
        zombieParent = spawn('sh', ['-c', 'sleep 0.1 & echo $!; exec sleep 60'], {
          stdio: ['ignore', 'pipe', 'ignore'],
        });
        const zombie = Number(await lineOf(zombieParent.stdout, /^(\d+)\n/m, 10_000));
        while (readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z') await sleep(20);
        writeFileSync(
          join(out('zombie-lock'), RUN_LOCK_FILE),
          JSON.stringify({
            pid: zombie,
            startTime: processStartTime(zombie),
            host: hostname(),
            command: 'eval',
            since: 'earlier',
          }),
        );
      },
      args: () => rollout('zombie-lock', 'http://127.0.0.1:1', ['--resume']),
      // The run's one step is done: the resume finds nothing left to do.
      expect: { code: 0 },
      check: (outcome) => {
        zombieParent?.kill('SIGKILL');
        return /RUN_FOLDER_LOCKED/.test(outcome.stderr) ? ['refused as locked by a zombie'] : [];
      },
    },
    // Item 7: bad batches are 400s naming the field; the service keeps serving.
    {
      name: 'trainer serve: token ids beyond the vocabulary, then a good batch',
      group: 'real-model',
      setup: ensureModel,
      args: () => ['trainer', 'serve', '--model', model],
      during: async (child) => {
        const url = await lineOf(child.stderr, /trainer listening on (http:\/\/[^:\s]+:\d+)/);
        const post = async (inputIds: number[]) => {
          const body = encodeTrainerBatch(
            [{ inputIds, lossMask: inputIds.map((_, index) => (index > 0 ? 1 : 0)) }],
            {
              learningRate: 1e-3,
            },
          );
          const response = await fetch(`${url}/sft_step`, { method: 'POST', body: new Uint8Array(body) });
          return `${response.status} ${await response.text()}`;
        };
        if (url !== null) answers.push(await post([5, 6, 1_000_000]), await post([5, 6, 7]));
        stop(child);
      },
      expect: { signal: 'SIGTERM' },
      limitMs: 180_000,
      check: () => [
        ...(/^400 .*input_ids: sequence 0 position 2 holds 1000000/.test(answers[0] ?? '')
          ? []
          : [`the bad batch got: ${answers[0]}`]),
        ...(/^200 /.test(answers[1] ?? '') ? [] : [`the good batch after it got: ${answers[1]}`]),
      ],
    },
    // Item 8: the rank's own error first.
    {
      name: 'trainer serve --model with a truncated model.safetensors',
      group: 'real-model',
      setup: ensureModel,
      args: () => ['trainer', 'serve', '--model', truncated],
      expect: { code: 1 },
      limitMs: 180_000,
      check: stderrMatches(/TRAINER_START_FAILED\] .*before it listened: rank 0: \w+/),
    },
    {
      name: 'trainer serve --port in use',
      group: 'real-model',
      setup: ensureModel,
      args: () => ['trainer', 'serve', '--model', model, '--port', String(busyPort)],
      expect: { code: 1 },
      limitMs: 180_000,
      check: stderrMatches(
        /before it listened: rank 0: OSError: cannot listen on 127\.0\.0\.1:\d+: Address already in use/,
      ),
    },
    // Item 9: a Hugging Face folder without tokenizer.json.
    {
      name: 'train sft --model: a Hugging Face folder without tokenizer.json',
      group: 'real-model',
      setup: ensureModel,
      args: () => sft('no-tokenizer', [], noTokenizer),
      expect: { code: 1 },
      absent: () => [run('no-tokenizer')],
      check: stderrMatches(/MODEL_FOLDER_INCOMPLETE\] .*without tokenizer\.json/),
    },
    // Item 14: one exit-code rule.
    ...(
      [
        ['trainer serve --host 0.0.0.0 without a token', ['--host', '0.0.0.0'], {}, 'AUTH_REQUIRED'],
        [
          'trainer serve with AGENTMATH_TRAINER_TOKEN=""',
          ['--host', '0.0.0.0'],
          { AGENTMATH_TRAINER_TOKEN: '' },
          'AUTH_TOKEN_EMPTY',
        ],
        ['trainer serve --token with --no-auth', ['--token', 't0k3n', '--no-auth'], {}, 'AUTH_CONFLICT'],
      ] as const
    ).map(
      ([name, extra, env, code]): Probe => ({
        name,
        group: 'real-model',
        args: () => ['trainer', 'serve', '--model', model, ...extra],
        env,
        expect: { code: 2 },
        check: stderrMatches(new RegExp(`\\[${code}\\]`)),
      }),
    ),
    {
      name: 'model init --hidden 63',
      group: 'real-model',
      args: () => ['model', 'init', '--arch', 'qwen3', '--out', join(root, 'hidden-63'), '--hidden', '63'],
      expect: { code: 2 },
      absent: () => [join(root, 'hidden-63')],
    },
    // Item 16: the hub is never asked.
    {
      name: 'engine serve --model: /update_weights_from_disk with a hub-style name',
      group: 'real-model',
      setup: ensureModel,
      args: () => ['engine', 'serve', '--model', model, '--port', '0'],
      during: async (child) => {
        const url = await lineOf(child.stdout, /^(http:\/\/\S+)\n/m);
        if (url !== null) {
          const response = await fetch(`${url}/update_weights_from_disk`, {
            method: 'POST',
            body: JSON.stringify({ model_path: 'Qwen/Qwen3-0.6B' }),
          });
          answers.push(`${response.status} ${await response.text()}`);
        }
        stop(child);
      },
      expect: { signal: 'SIGTERM' },
      limitMs: 180_000,
      check: () => {
        const answer = answers.at(-1) ?? '';
        return /^400 .*"success": false.*no such folder: Qwen\/Qwen3-0\.6B/.test(answer)
          ? []
          : [`answered: ${answer}`];
      },
    },
  ];
}

/** A port that something listens on for the rest of the sweep (the "port in use" probe). */
const busy = createServer().listen(0, '127.0.0.1');
busy.unref();
let busyPort = 0;
busy.on('listening', () => {
  busyPort = (busy.address() as { port: number }).port;
});

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
