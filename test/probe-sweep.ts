/**
 * The probe sweep: the newer commands (rollout, synth run, report, train rl,
 * simulate) run the way a careful user meets them — realistic mistakes, hostile input, signals,
 * a killed launcher — each through the real CLI against scripted servers on loopback (no model,
 * no network). For every probe it checks: the documented exit status (docs/cli.md), that files
 * it did not own are byte for byte as before, that it ended within its limit (else it is
 * killed and reported as a hang), and that no process it started is left (every descendant
 * seen while it ran must be gone shortly after). Prints one line per probe and a summary;
 * exits 1 when a probe failed.
 *
 *   bash scripts/probe-sweep.sh              # all probes
 *   bash scripts/probe-sweep.sh rollout      # only probes whose name contains "rollout"
 *   bash scripts/probe-sweep.sh real-model   # only the real-model commands' probes (their group says so)
 *   bash scripts/probe-sweep.sh newest       # only the newest commands' probes
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createByteLevelTokenizer, writeByteLevelTokenizerFiles } from '../src/engine/index.ts';
import { startScriptedSglangServer } from './agent-fixtures.ts';
import { startScriptedTeacher } from './fixtures/scripted-teacher-server.ts';
import { newestCommandProbes } from './probe-sweep-newest-commands.ts';
import { realModelProbes } from './probe-sweep-real-model.ts';
import { alive, descendantsOf } from './process-tree.ts';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CLI = join(ROOT, 'bin', 'agentmath.js');
const SYSTEM_NODE = '/usr/bin/node';

export type Outcome = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };
export type Probe = {
  name: string;
  /** The probe's group: commands, real-model or newest (a filter matches it or the name). */
  group: string;
  args: () => string[];
  /** What docs/cli.md says: an exit code, or death by a signal. */
  expect: { code: number } | { signal: NodeJS.Signals };
  limitMs?: number;
  /** Files the probe must leave exactly as they were. */
  untouched?: () => string[];
  /** Paths that must not exist afterwards (nothing written). */
  absent?: () => string[];
  setup?: () => Promise<void> | void;
  /** Runs while the CLI runs (send a signal once it is busy). */
  during?: (child: ChildProcess) => Promise<void>;
  /** Further checks; a message for each failure. */
  check?: (outcome: Outcome) => string[] | Promise<string[]>;
  stdin?: string;
  env?: NodeJS.ProcessEnv;
  /** The Node that runs the launcher (default: this one). */
  node?: string;
  skip?: () => string | null;
};

const work = mkdtempSync(join(tmpdir(), 'agentmath-probe-sweep-'));
const tokenizer = join(work, 'tokenizer');
const bench = join(work, 'bench.jsonl');
const synthInput = join(work, 'synth.jsonl');
const KEY = 'sk-probe-secret-0000';
const rewrite =
  '<think>Multiply. <code>\nprint(123 * 456)\n</code>\n<interpreter>\n56088\n</interpreter>\nDone.</think>\nThe answer is \\boxed{56088}.';
const synthRecord = (id: string) =>
  JSON.stringify({ id, problem: `[${id}] What is 123 * 456?`, solution: 'It is 56088.', answer: '56088' });

const hashOf = (path: string) =>
  existsSync(path) ? createHash('sha256').update(readFileSync(path)).digest('hex') : 'absent';
const out = (name: string) => join(work, 'runs', name);
const waitFor = async (predicate: () => boolean, limitMs = 30_000) => {
  const deadline = Date.now() + limitMs;
  while (!predicate() && Date.now() < deadline) await sleep(50);
};
const busy = (child: ChildProcess, count: number) => async () => {
  await waitFor(() => descendantsOf(child.pid!).length >= count);
  await sleep(300);
};
const reRunsUnderBundledNode = () =>
  existsSync(SYSTEM_NODE) &&
  execFileSync(SYSTEM_NODE, ['-p', 'Boolean(process.features.typescript)'], { encoding: 'utf8' }).trim() ===
    'false';

async function main(): Promise<number> {
  const filter = process.argv[2] ?? '';
  await writeByteLevelTokenizerFiles(tokenizer);
  writeFileSync(bench, `${JSON.stringify({ id: 'a', problem: 'What is 1+1?', answer: '2' })}\n`);
  writeFileSync(synthInput, `${['a', 'b', 'c'].map(synthRecord).join('\n')}\n`);
  const hung = await startScriptedSglangServer({
    tokenizer: createByteLevelTokenizer(),
    model: { parts: ['never sent'] },
    behaviour: () => 'hang',
  });
  const teacher = await startScriptedTeacher(() => rewrite);
  const paperWorkload = JSON.parse(readFileSync(join(ROOT, 'src', 'sim', 'workloads', 'paper.json'), 'utf8'));
  const workload = (name: string, change: Record<string, unknown>) => {
    const path = join(work, `workload-${name}.json`);
    writeFileSync(path, JSON.stringify({ ...paperWorkload, ...change }));
    return path;
  };

  const rollout = (name: string, engine: string, extra: string[] = []) => [
    'rollout',
    '--bench',
    bench,
    '--engine',
    engine,
    '--tokenizer',
    tokenizer,
    '--steps',
    '1',
    '--group-size',
    '2',
    '--batch-size',
    '1',
    '--replicas',
    '1',
    '--limit',
    '2',
    '--sandbox-workers',
    '2',
    '--out',
    out(name),
    ...extra,
  ];
  const synth = (name: string, extra: string[] = [], input = synthInput) => [
    'synth',
    'run',
    '--input',
    input,
    '--teacher',
    teacher.url,
    '--model',
    'scripted',
    '--out',
    out(name),
    '--stages',
    'format,answer',
    ...extra,
  ];
  const foreignLines = `${Array.from({ length: 200 }, (_, index) => JSON.stringify({ line: index })).join('\n')}\n`;
  const foreign = (name: string) => () => {
    mkdirSync(out(name), { recursive: true });
    writeFileSync(join(out(name), 'trajectories.jsonl'), foreignLines);
  };
  const stderrMatches = (pattern: RegExp) => (outcome: Outcome) =>
    pattern.test(outcome.stderr) ? [] : [`stderr does not match ${pattern}`];

  const probes: Probe[] = [
    // Data loss
    ...[[], ['--resume']].map(
      (extra): Probe => ({
        name: `rollout: --out holding a foreign trajectories.jsonl ${extra.join(' ')}`.trim(),
        group: 'commands',
        setup: foreign(`foreign${extra.length}`),
        args: () => rollout(`foreign${extra.length}`, 'http://127.0.0.1:1', extra),
        expect: { code: 2 },
        untouched: () => [join(out(`foreign${extra.length}`), 'trajectories.jsonl')],
        absent: () => [join(out(`foreign${extra.length}`), 'config.json')],
      }),
    ),
    {
      name: 'rollout: --resume where no run is',
      group: 'commands',
      args: () => rollout('no-run', 'http://127.0.0.1:1', ['--resume']),
      expect: { code: 2 },
      absent: () => [out('no-run')],
    },
    {
      name: 'synth run: teacher answers 401 (key echoed)',
      group: 'commands',
      setup: () => {
        teacher.faultFor = () => ({ kind: '401' });
      },
      args: () => synth('outage'),
      env: { OPENAI_API_KEY: KEY },
      expect: { code: 1 },
      check: (outcome) => [
        ...stderrMatches(/3 of 3 records were lost to an outage/)(outcome),
        ...(outcome.stderr.includes(KEY) || outcome.stdout.includes(KEY) ? ['the API key was printed'] : []),
      ],
    },
    {
      name: 'synth run --resume once the teacher is fixed: the outages are retried',
      group: 'commands',
      setup: () => {
        teacher.faultFor = () => null;
        teacher.requests.length = 0;
      },
      args: () => [...synth('outage'), '--resume'],
      env: { OPENAI_API_KEY: KEY },
      expect: { code: 0 },
      check: (outcome) => {
        const stats = JSON.parse(readFileSync(join(out('outage'), 'stats.json'), 'utf8'));
        return [
          ...(/kept 3 of 3/.test(outcome.stdout) ? [] : ['not every record kept after the fix']),
          // The first run's 3 refused requests and this run's 3 answers.
          ...(stats.teacher.requests === 3 + teacher.requests.length
            ? []
            : [
                `stats count ${stats.teacher.requests} requests, the server saw ${3 + teacher.requests.length}`,
              ]),
        ];
      },
    },
    {
      name: 'synth run: input starting with a UTF-8 BOM',
      group: 'commands',
      setup: () => writeFileSync(join(work, 'bom.jsonl'), `\uFEFF${synthRecord('first')}\n`),
      args: () => synth('bom', [], join(work, 'bom.jsonl')),
      expect: { code: 0 },
      check: (outcome) =>
        /kept 1 of 1 records \(0 input rows skipped\)/.test(outcome.stdout)
          ? []
          : ['the first record was lost'],
    },
    // Hangs
    {
      name: 'rollout: engine that never answers, --engine-timeout-ms 300',
      group: 'commands',
      args: () => rollout('hung', hung.url, ['--engine-timeout-ms', '300']),
      expect: { code: 1 },
      limitMs: 90_000,
    },
    // Orphans and writers
    ...(['SIGINT', 'SIGTERM'] as const).map(
      (name): Probe => ({
        name: `rollout: ${name} to the launcher mid-run`,
        group: 'commands',
        args: () => rollout(`signal-${name}`, hung.url),
        during: async (child) => {
          await busy(child, 3)();
          signal(child, name);
        },
        expect: { signal: name },
        check: stderrMatches(/resume with --resume --out/),
      }),
    ),
    {
      name: 'rollout: kill -9 of the launcher (re-run under the bundled Node)',
      group: 'commands',
      node: SYSTEM_NODE,
      skip: () => (reRunsUnderBundledNode() ? null : 'the system Node runs TypeScript: no re-run'),
      args: () => rollout('kill9', hung.url),
      during: async (child) => {
        await busy(child, 3)();
        signal(child, 'SIGKILL');
      },
      expect: { signal: 'SIGKILL' },
    },
    {
      name: 'synth run: kill -9 of the launcher (re-run under the bundled Node)',
      group: 'commands',
      node: SYSTEM_NODE,
      skip: () => (reRunsUnderBundledNode() ? null : 'the system Node runs TypeScript: no re-run'),
      setup: () => {
        teacher.delayMs = 60_000;
      },
      args: () => synth('synth-kill9'),
      env: { OPENAI_API_KEY: KEY },
      during: async (child) => {
        await waitFor(() => existsSync(join(out('synth-kill9'), 'synth-run.json')));
        await sleep(300);
        signal(child, 'SIGKILL');
      },
      expect: { signal: 'SIGKILL' },
    },
    {
      name: 'synth run --resume right after: the stale lock is taken over',
      group: 'commands',
      skip: () => (reRunsUnderBundledNode() ? null : 'follows the kill -9 probe'),
      setup: () => {
        teacher.delayMs = 0;
      },
      args: () => [...synth('synth-kill9'), '--resume'],
      env: { OPENAI_API_KEY: KEY },
      expect: { code: 0 },
    },
    {
      name: 'rollout: a second writer on a folder in use',
      group: 'commands',
      args: () => rollout('second-writer', hung.url, ['--resume']),
      setup: async () => {
        const first = spawn(process.execPath, [CLI, ...rollout('second-writer', hung.url)], {
          detached: true,
          stdio: 'ignore',
        });
        firstWriter = first;
        await waitFor(() => existsSync(join(out('second-writer'), 'run.lock')));
      },
      expect: { code: 2 },
      check: async (outcome) => {
        const first = firstWriter;
        if (first?.pid !== undefined) {
          const tree = [first.pid, ...descendantsOf(first.pid)];
          process.kill(first.pid, 'SIGTERM');
          await waitFor(() => alive(tree).length === 0, 15_000);
          if (alive(tree).length > 0) return [`the first writer left ${alive(tree).join(', ')}`];
        }
        return stderrMatches(/RUN_FOLDER_LOCKED/)(outcome);
      },
    },
    {
      name: 'synth run: SIGINT mid-run prints the resume command',
      group: 'commands',
      setup: () => {
        teacher.delayMs = 60_000;
      },
      args: () => synth('interrupted'),
      env: { OPENAI_API_KEY: KEY },
      during: async (child) => {
        await waitFor(() => existsSync(join(out('interrupted'), 'synth-run.json')));
        await sleep(300);
        signal(child, 'SIGINT');
      },
      expect: { signal: 'SIGINT' },
      check: (outcome) => {
        teacher.delayMs = 0;
        return stderrMatches(/continue with --resume --out/)(outcome);
      },
    },
    // Exit codes and messages
    {
      name: 'rollout: every trajectory failed on the engine',
      group: 'commands',
      args: () => rollout('refused', 'http://127.0.0.1:1'),
      expect: { code: 1 },
      check: stderrMatches(/trajectories ended in an engine or sandbox error/),
    },
    ...(
      [
        ['--teacher not-a-url', ['--teacher', 'not-a-url']],
        ['--concurrency 0', ['--concurrency', '0']],
        ['--limit 0', ['--limit', '0']],
        ['--ngram 0', ['--ngram', '0']],
        ['--on-mismatch foo', ['--on-mismatch', 'foo']],
        ['--fields bogus=x', ['--fields', 'bogus=x']],
      ] as const
    ).map(
      ([label, extra], index): Probe => ({
        name: `synth run ${label}`,
        group: 'commands',
        args: () => [...synth(`bad-synth-${index}`), ...extra],
        expect: { code: 2 },
        absent: () => [out(`bad-synth-${index}`)],
      }),
    ),
    {
      name: 'synth run --out FILE',
      group: 'commands',
      args: () => synth('x').map((arg) => (arg === out('x') ? bench : arg)),
      expect: { code: 2 },
      untouched: () => [bench],
    },
    ...(
      [
        ['--tail-cut 0.5 alone', ['--tail-cut', '0.5']],
        ['--tail-cut 1.5', ['--kv-budget-tokens', '1000', '--tail-cut', '1.5']],
        ['--temperature -1', ['--temperature', '-1']],
        ['--group-size 1', ['--group-size', '1']],
        ['--engine not-a-url', ['--engine', 'not-a-url']],
      ] as const
    ).map(
      ([label, extra], index): Probe => ({
        name: `rollout ${label}`,
        group: 'commands',
        args: () => [...rollout(`bad-rollout-${index}`, 'http://127.0.0.1:1'), ...extra],
        expect: { code: 2 },
        absent: () => [out(`bad-rollout-${index}`)],
      }),
    ),
    {
      name: 'rollout --out FILE',
      group: 'commands',
      args: () => rollout('x', 'http://127.0.0.1:1').map((arg) => (arg === out('x') ? bench : arg)),
      expect: { code: 2 },
      untouched: () => [bench],
    },
    {
      name: 'rollout --resume with another engine (run identity)',
      group: 'commands',
      args: () => rollout('refused', hung.url, ['--resume']),
      expect: { code: 2 },
      check: stderrMatches(/RUN_IDENTITY_MISMATCH/),
    },
    {
      name: 'synth run with a missing --prompt',
      group: 'commands',
      args: () => synth('bad-prompt', ['--prompt', join(work, 'missing.md')]),
      expect: { code: 1 },
      absent: () => [join(out('bad-prompt'), 'synth-run.json')],
    },
    {
      name: 'synth run after it, corrected: starts (no run left behind)',
      group: 'commands',
      args: () => synth('bad-prompt'),
      env: { OPENAI_API_KEY: KEY },
      expect: { code: 0 },
    },
    {
      name: 'report --out DIR',
      group: 'commands',
      args: () => ['report', out('refused'), '--out', work],
      expect: { code: 2 },
      check: (outcome) => (/EISDIR/.test(outcome.stderr) ? ['raw EISDIR'] : []),
    },
    {
      name: 'report on a rollout run',
      group: 'commands',
      args: () => ['report', out('refused')],
      expect: { code: 1 },
      check: stderrMatches(/is an `agentmath rollout` run; report reads eval runs/),
    },
    {
      name: 'report on a synthesis run',
      group: 'commands',
      args: () => ['report', out('outage')],
      expect: { code: 1 },
      check: stderrMatches(/is an `agentmath synth run` folder/),
    },
    {
      name: 'train rl --model /missing',
      group: 'commands',
      args: () => ['train', 'rl', '--model', join(work, 'missing-model'), '--out', out('rl-missing')],
      expect: { code: 1 },
      check: stderrMatches(/does not exist/),
    },
    {
      name: 'synth run --input - (standard input)',
      group: 'commands',
      stdin: `${synthRecord('piped')}\n`,
      args: () => synth('stdin', [], '-'),
      env: { OPENAI_API_KEY: KEY },
      expect: { code: 0 },
    },
    {
      name: 'train rl --help lists the choices of enumerated options',
      group: 'commands',
      args: () => ['train', 'rl', '--help'],
      expect: { code: 0 },
      check: (outcome) =>
        /--mode <mode> .*\(choices: "async", "sync"/.test(outcome.stdout.replace(/\s+/g, ' '))
          ? []
          : ['no choices in --help'],
    },
    // simulate (items 4, 10, 14, 15: another helper's part; replayed here all the same)
    ...(
      [
        ['--steps 0', ['--steps', '0']],
        ['--kv-budget 0', ['--kv-budget', '0']],
        ['--tail-cut 0', ['--tail-cut', '0']],
        ['--configuration bogus', ['--configuration', 'bogus']],
      ] as const
    ).map(
      ([label, extra]): Probe => ({
        name: `simulate ${label}`,
        group: 'commands',
        args: () => ['simulate', ...extra],
        expect: { code: 2 },
        limitMs: 30_000,
      }),
    ),
    ...(
      [
        ['kvCapacityTokens 10', { kvCapacityTokens: 10 }],
        ['stepPrompts 1e12', { stepPrompts: 1e12 }],
        [
          'responseTokens min > max',
          { responseTokens: { lognormal: { mu: 5, sigma: 1 }, min: 500, max: 100 } },
        ],
        ['replicas 1e12', { replicas: 1e12 }],
      ] as const
    ).map(
      ([label, change], index): Probe => ({
        name: `simulate workload ${label}`,
        group: 'commands',
        args: () => [
          'simulate',
          '--workload',
          workload(`w${index}`, change),
          '--steps',
          '2',
          '--configuration',
          'static-sync',
        ],
        expect: { code: 1 },
        limitMs: 30_000,
      }),
    ),
    // The real-model commands (model init, train sft --model), --engine URL URL.
    ...realModelPartAProbes(),
    // The real-model services and commands (test/probe-sweep-real-model.ts).
    ...realModelProbes({ work, out, rollout }),
    // The newest commands as a careful user meets them (test/probe-sweep-newest-commands.ts).
    ...newestCommandProbes({ work, out, bench }),
  ];

  let failed = 0;
  let passed = 0;
  let skipped = 0;
  for (const probe of probes) {
    if (!probe.name.includes(filter) && !probe.group.includes(filter)) continue;
    const skip = probe.skip?.() ?? null;
    if (skip !== null) {
      skipped++;
      process.stdout.write(`SKIP  [${probe.group}] ${probe.name}: ${skip}\n`);
      continue;
    }
    await probe.setup?.();
    const { problems, ended } = await runProbe(probe);
    if (problems.length === 0) passed++;
    else failed++;
    process.stdout.write(
      `${problems.length === 0 ? 'PASS' : 'FAIL'}  [${probe.group}] ${probe.name}: ${ended}${problems.length === 0 ? '' : `\n        ${problems.join('\n        ')}`}\n`,
    );
  }
  process.stdout.write(
    `\n${passed} passed, ${failed} failed, ${skipped} skipped${failed === 0 ? '' : ` (work folder kept: ${work})`}\n`,
  );
  await hung.close();
  await teacher.close();
  if (failed === 0) rmSync(work, { recursive: true, force: true });
  return failed === 0 ? 0 : 1;
}

let firstWriter: ChildProcess | null = null;

/**
 * `model init` and `train sft --model` with a tiny model of `model init` and
 * `tasks write-arith` data (made once, by the first probe that needs them), `--engine URL URL`.
 */
function realModelPartAProbes(): Probe[] {
  const model = join(work, 'tiny-qwen3');
  const data = join(work, 'arith-text.jsonl');
  const bomData = join(work, 'arith-text-bom.jsonl');
  const file = join(work, 'a-file.txt');
  const link = join(work, 'a-link');
  const notes = join(work, 'notes');
  const matches = (pattern: RegExp) => (outcome: Outcome) =>
    pattern.test(outcome.stderr) ? [] : [`stderr does not match ${pattern}`];
  const cli = (args: string[]) => {
    const result = spawnSync(process.execPath, [CLI, ...args], { cwd: work, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`agentmath ${args.join(' ')}: ${result.stderr}`);
  };
  const files = () => {
    if (!existsSync(file)) writeFileSync(file, 'mine\n');
    if (!existsSync(link)) symlinkSync(file, link);
  };
  const ensureModel = () => {
    if (!existsSync(join(model, 'model-init.json')))
      cli(['model', 'init', '--arch', 'qwen3', '--out', model, '--hidden', '32']);
    if (!existsSync(data))
      cli(['tasks', 'write-arith', '--out', data, '--count', '8', '--levels', '1', '--style', 'text']);
    if (!existsSync(bomData)) writeFileSync(bomData, `\uFEFF${readFileSync(data, 'utf8')}`);
  };
  const init = (target: string, extra: string[] = []) => [
    'model',
    'init',
    '--arch',
    'qwen3',
    '--out',
    target,
    '--hidden',
    '32',
    ...extra,
  ];
  const sft = (name: string, dataFile = bomData, extra: string[] = []) => [
    'train',
    'sft',
    '--model',
    model,
    '--data',
    dataFile,
    '--out',
    out(name),
    '--batch-size',
    '2',
    '--micro-batch-tokens',
    '512',
    '--checkpoint-every',
    '1',
    ...extra,
  ];
  const firstMetric = (name: string) => async (child: ChildProcess) => {
    await waitFor(() => existsSync(join(out(name), 'metrics.jsonl')) || child.exitCode !== null, 240_000);
    signal(child, 'SIGINT');
  };
  const engines = ['http://127.0.0.1:1', 'http://127.0.0.1:2'];
  return [
    {
      name: "model init --out DIR beside a user's DIR.tmp",
      group: 'real-model',
      setup: () => {
        mkdirSync(`${model}.tmp`, { recursive: true });
        writeFileSync(join(`${model}.tmp`, 'notes.md'), 'mine\n');
      },
      args: () => init(model),
      expect: { code: 0 },
      untouched: () => [join(`${model}.tmp`, 'notes.md')],
      limitMs: 180_000,
    },
    {
      name: 'model init --out a folder of notes',
      group: 'real-model',
      setup: () => {
        mkdirSync(notes, { recursive: true });
        writeFileSync(join(notes, 'plan.md'), 'my plan\n');
      },
      args: () => init(notes),
      expect: { code: 2 },
      untouched: () => [join(notes, 'plan.md')],
      check: matches(/notes holds files that `agentmath model init` did not write/),
    },
    ...[
      ['FILE', file],
      ['a link to a file', link],
    ].map(
      ([label, target]): Probe => ({
        name: `model init --out ${label}`,
        group: 'real-model',
        setup: files,
        args: () => init(target as string),
        expect: { code: 2 },
        untouched: () => [file],
        absent: () => [`${target}.tmp`],
        check: matches(/\[RUN_FOLDER_REFUSED\] --out .* is a file/),
      }),
    ),
    {
      name: 'train sft --model --out FILE',
      group: 'real-model',
      setup: () => {
        ensureModel();
        files();
      },
      args: () => sft('x').map((arg) => (arg === out('x') ? file : arg)),
      expect: { code: 2 },
      untouched: () => [file],
      check: matches(/--out .* is a file/),
    },
    {
      name: 'train rl --out FILE',
      group: 'real-model',
      setup: files,
      args: () => ['train', 'rl', '--out', file],
      expect: { code: 2 },
      untouched: () => [file],
      check: matches(/--out .* is a file/),
    },
    {
      name: 'train sft --model with a missing --data',
      group: 'real-model',
      setup: ensureModel,
      args: () => sft('sft-run', join(work, 'missing.jsonl'), ['--steps', '2']),
      expect: { code: 1 },
      absent: () => [join(out('sft-run'), 'config.json')],
    },
    {
      name: 'train sft --model corrected, its data starting with a UTF-8 BOM',
      group: 'real-model',
      setup: ensureModel,
      args: () => sft('sft-run', bomData, ['--steps', '2']),
      expect: { code: 0 },
      limitMs: 300_000,
    },
    {
      name: 'report --table on the train sft --model run',
      group: 'real-model',
      args: () => ['report', out('sft-run'), '--table'],
      expect: { code: 2 },
      check: (outcome) => [
        ...matches(/--table reads train rl runs or eval runs; /)(outcome),
        ...(/NaN/.test(outcome.stdout) ? ['NaN rows printed'] : []),
      ],
    },
    {
      name: 'train sft --model --resume on a corrupt config.json',
      group: 'real-model',
      setup: () => {
        ensureModel();
        mkdirSync(out('sft-corrupt'), { recursive: true });
        writeFileSync(join(out('sft-corrupt'), 'config.json'), '{"model": "m", "da');
      },
      args: () => [...sft('sft-corrupt'), '--resume'],
      expect: { code: 1 },
      untouched: () => [join(out('sft-corrupt'), 'config.json')],
      check: matches(
        /\[RUN_CONFIG_INVALID\] .*config\.json: the run's saved configuration is not valid JSON/,
      ),
    },
    {
      name: 'bench tokenizer on a tokenizer.json that is not JSON',
      group: 'real-model',
      setup: () => {
        ensureModel();
        mkdirSync(join(work, 'broken-tokenizer'), { recursive: true });
        writeFileSync(
          join(work, 'broken-tokenizer', 'tokenizer_config.json'),
          readFileSync(join(model, 'tokenizer_config.json')),
        );
        writeFileSync(join(work, 'broken-tokenizer', 'tokenizer.json'), '{"model": {"voc');
      },
      args: () => ['bench', 'tokenizer', '--tokenizer', join(work, 'broken-tokenizer')],
      expect: { code: 1 },
      check: matches(/\[TOKENIZER_INVALID\] .*broken-tokenizer\/tokenizer\.json: not JSON/),
    },
    {
      name: 'train sft --model: a second --resume while the run is live',
      group: 'real-model',
      setup: async () => {
        ensureModel();
        const first = spawn(process.execPath, [CLI, ...sft('sft-live', bomData, ['--steps', '200'])], {
          cwd: work,
          detached: true,
          stdio: 'ignore',
        });
        firstWriter = first;
        await waitFor(() => existsSync(join(out('sft-live'), 'metrics.jsonl')), 240_000);
      },
      args: () => [...sft('sft-live', bomData, ['--steps', '200']), '--resume'],
      expect: { code: 2 },
      untouched: () => [join(out('sft-live'), 'config.json')],
      limitMs: 120_000,
      check: async (outcome) => {
        const steps = readFileSync(join(out('sft-live'), 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n').length;
        const first = firstWriter;
        const problems: string[] = [];
        if (first?.pid !== undefined) {
          const tree = [first.pid, ...descendantsOf(first.pid)];
          process.kill(first.pid, 'SIGTERM');
          await waitFor(() => alive(tree).length === 0, 60_000);
          if (alive(tree).length > 0) problems.push(`the first writer left ${alive(tree).join(', ')}`);
        }
        const after = readFileSync(join(out('sft-live'), 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n');
        if (after.length < steps) problems.push(`metrics.jsonl lost lines: ${steps} → ${after.length}`);
        return [...problems, ...matches(/RUN_FOLDER_LOCKED/)(outcome)];
      },
    },
    {
      name: 'train sft --model: SIGINT mid-run prints the command that resumes',
      group: 'real-model',
      setup: ensureModel,
      args: () => sft('sft-stopped', bomData, ['--steps', '200']),
      during: firstMetric('sft-stopped'),
      expect: { signal: 'SIGINT' },
      limitMs: 300_000,
      check: (outcome) => [
        ...matches(/resume with:\n {2}agentmath train sft --model \S+ .*--out \S+ --resume\n/)(outcome),
        ...(/HF_SFT_FAILED/.test(outcome.stderr) ? ['the stop is labelled a failure'] : []),
      ],
    },
    ...[
      ['--engine URL URL', ['--engine', ...engines]],
      ['--engine URL --engine URL', engines.flatMap((url) => ['--engine', url])],
    ].map(
      ([label, flags]): Probe => ({
        name: `rollout ${label as string}`,
        group: 'real-model',
        args: () =>
          [
            'rollout',
            '--bench',
            bench,
            ...(flags as string[]),
            '--tokenizer',
            tokenizer,
            '--steps',
            '1',
            '--group-size',
            '2',
            '--batch-size',
            '1',
            '--limit',
            '1',
            '--sandbox-workers',
            '1',
            '--out',
            out(`engines-${label === '--engine URL URL' ? 'one' : 'two'}`),
          ] as string[],
        expect: { code: 1 },
        check: matches(new RegExp(`router over ${engines.join(', ')}`)),
      }),
    ),
    {
      name: 'train rl --engine URL URL',
      group: 'real-model',
      setup: () => {
        mkdirSync(join(work, 'byte-model'), { recursive: true });
        writeFileSync(join(work, 'byte-model', 'config.json'), '{}\n');
      },
      args: () => [
        'train',
        'rl',
        '--model',
        join(work, 'byte-model'),
        '--engine',
        ...engines,
        '--out',
        out('rl-engines'),
      ],
      expect: { code: 1 },
      check: matches(/--engine: for a Hugging Face model/),
    },
    {
      name: 'eval --engine URL URL (both servers, through the router; down here: an outage, resumable)',
      group: 'real-model',
      args: () => [
        ...['eval', '--bench', bench, '--engine', ...engines, '--api', 'openai', '--model', 'm'],
        ...['--limit', '1', '--engine-timeout-ms', '2000', '--out', out('eval-engines')],
      ],
      expect: { code: 1 },
      check: matches(/ended in an engine or sandbox error[\s\S]*--resume/),
    },
  ];
}

/** Sends `name` to the launcher if it still runs (a probe that ended early is reported by its status). */
function signal(child: ChildProcess, name: NodeJS.Signals): void {
  try {
    process.kill(child.pid!, name);
  } catch {
    // it ended before the signal
  }
}

/** Runs one probe: what went wrong (empty: it passed), and how it ended. */
async function runProbe(probe: Probe): Promise<{ problems: string[]; ended: string }> {
  const untouched = new Map((probe.untouched?.() ?? []).map((path) => [path, hashOf(path)]));
  const limitMs = probe.limitMs ?? 60_000;
  const started = Date.now();
  const child = spawn(probe.node ?? process.execPath, [CLI, ...probe.args()], {
    cwd: work,
    detached: true,
    stdio: [probe.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', OPENAI_API_KEY: '', ...probe.env },
  });
  if (probe.stdin !== undefined) child.stdin?.end(probe.stdin);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const seen = new Set<number>();
  const watcher = setInterval(() => {
    if (child.pid !== undefined) for (const pid of descendantsOf(child.pid)) seen.add(pid);
  }, 50);
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    killTree(child, seen);
  }, limitMs);
  const ended = new Promise<Outcome>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  await probe.during?.(child);
  const outcome = await ended;
  clearTimeout(timer);
  clearInterval(watcher);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const problems: string[] = [];
  if (hung) problems.push(`still running after its limit of ${limitMs / 1000} s: killed (a hang)`);
  const expected = probe.expect;
  const got = outcome.signal !== null ? `death by ${outcome.signal}` : `exit ${outcome.code}`;
  const want = 'code' in expected ? `exit ${expected.code}` : `death by ${expected.signal}`;
  if (!hung && got !== want) problems.push(`${got}, documented: ${want}`);
  for (const [path, before] of untouched)
    if (hashOf(path) !== before) problems.push(`${path} was changed (not this run's file)`);
  for (const path of probe.absent?.() ?? []) if (existsSync(path)) problems.push(`${path} was written`);
  const pids = [...seen];
  await waitFor(() => alive(pids).length === 0, 15_000);
  const left = alive(pids);
  if (left.length > 0) {
    problems.push(`processes left behind: ${left.map(describe).join('; ')}`);
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  problems.push(...((await probe.check?.(outcome)) ?? []));
  if (problems.length > 0) {
    const tail = outcome.stderr.trim().split('\n').slice(-3).join(' | ');
    problems.push(`stderr: ${tail.slice(0, 400)}`);
  }
  return { problems, ended: `${got} after ${seconds} s, ${pids.length} child process(es) seen, none left` };
}

function killTree(child: ChildProcess, seen: Set<number>): void {
  for (const pid of [child.pid, ...seen]) {
    try {
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function describe(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 80)}`;
  } catch {
    return String(pid);
  }
}

process.exitCode = await main();
