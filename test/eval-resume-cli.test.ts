/**
 * `agentmath eval --resume` as a user meets it: a finished run resumed with any option that
 * defines it changed is refused (status 2, every differing field named, nothing written, no
 * engine call), and resumed with the same options it goes on. Also: `--out` naming a file, the
 * run again without `--resume`, `--resume` where no run is, a folder of other files (exit 2),
 * an absurd `-k`, a benchmark file that starts with a UTF-8 byte-order mark, and a hung engine
 * with `--engine-timeout-ms` (the summary then shows `–`, not 0.0%).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAllClis, startCli } from './cli-process.ts';
import { type ScriptedServer, startScriptedServer } from './eval-scripted-server.ts';

let folder: string;
let server: ScriptedServer;
const final = (text: string) => ({ final: text });

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'agentmath-eval-resume-'));
  const rows = [
    { id: 'P1', question: 'Problem P1: what is 3 times 4?', answer: '12' },
    { id: 'P2', question: 'Problem P2: what is 3 + 4?', answer: '7' },
  ];
  // A byte-order mark first, as some editors write one.
  writeFileSync(join(folder, 'bom.jsonl'), `\uFEFF${rows.map((row) => JSON.stringify(row)).join('\n')}\n`);
  writeFileSync(join(folder, 'other.jsonl'), `${JSON.stringify(rows[0])}\n`);
  writeFileSync(join(folder, 'a-file'), 'not a folder\n');
  const answers = (value: string) => [0, 1, 2].map(() => [final(`<think>Easy.</think>\n\\boxed{${value}}.`)]);
  server = await startScriptedServer({
    script: { P1: answers('12'), P2: answers('7') },
    problemKey: (prompt) => /Problem (P\d+)/.exec(prompt)?.[1],
  });
});

afterAll(async () => {
  killAllClis();
  await server.close();
  rmSync(folder, { recursive: true, force: true });
});

const base = () => [
  'eval',
  '--bench',
  'bom.jsonl',
  '--out',
  'run',
  '--engine',
  server.url,
  '--api',
  'openai',
  '--model',
  'scripted',
  '--seed',
  '0',
  '--sandbox-workers',
  '1',
  '--concurrency',
  '2',
];
const run = (args: string[]) => startCli(args, { cwd: folder }).done;
const runFiles = () =>
  ['config.json', 'trajectories.jsonl', 'summary.json'].map((name) =>
    readFileSync(join(folder, 'run', name), 'utf8'),
  );

describe('eval --resume', () => {
  beforeAll(async () => {
    const first = await run(base());
    expect(first.stderr).not.toMatch(/agentmath: \[/);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('avg@1 100.0%');
  }, 120_000);

  // Each option that defines the run, changed, and the field the refusal must name.
  const changes: [string[], string][] = [
    [['-k', '2'], 'k: saved 1, now 2'],
    [['--limit', '1'], 'limit: saved null, now 1'],
    [['--temperature', '1'], 'sampling.temperature: saved 0.6, now 1'],
    [['--top-p', '0.5'], 'sampling.topP: saved 0.95, now 0.5'],
    [['--max-tool-calls', '3'], 'budgets.maxToolCalls: saved 16, now 3'],
    [['--max-tokens', '9000'], 'budgets.maxTotalTokens: saved 16384, now 9000'],
    [['--max-new-tokens', '100'], 'budgets.maxNewTokensPerTurn: saved 4096, now 100'],
    [['--tool-timeout-ms', '999'], 'toolTimeoutMs: saved 10000, now 999'],
    [['--dialect', 'markdown'], 'dialect: saved "tags", now "markdown"'],
    [['--prompt', 'problem-only'], 'prompt: saved "instructed", now "problem-only"'],
    [['--model', 'another'], 'engine.model: saved "scripted", now "another"'],
    [['--seed', '5'], 'seed: saved 0, now 5'],
    [['--bench', 'other.jsonl'], 'benchmark: saved "bom", now "other"'],
  ];

  it.each(changes)(
    'refuses %j, naming the field, writing nothing, calling no engine',
    async (change, field) => {
      const before = runFiles();
      const requests = server.requests();
      const result = await run([...base(), ...change, '--resume']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(field);
      expect(result.stderr).toMatch(/cannot resume .*nothing was written/);
      expect(result.stderr).toContain('start a new run with another --out');
      expect(result.stderr).not.toMatch(/Resume with:/);
      expect(runFiles()).toEqual(before);
      expect(server.requests()).toBe(requests);
    },
  );

  it('the run without --resume, --resume where no run is, a folder of other files: exit 2, nothing written', async () => {
    const again = await run(base());
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(
      /\[RUN_FOLDER_REFUSED\] .*run already holds an `agentmath eval` run: pass --resume/,
    );
    const args = base();
    args[args.indexOf('run')] = 'no-run-here';
    const noRun = await run([...args, '--resume']);
    expect(noRun.code).toBe(2);
    expect(noRun.stderr).toMatch(
      /no-run-here\/config\.json does not exist: there is no `agentmath eval` run to resume/,
    );
    expect(existsSync(join(folder, 'no-run-here'))).toBe(false);
    mkdirSync(join(folder, 'notes'));
    writeFileSync(join(folder, 'notes', 'plan.md'), 'mine\n');
    args[args.indexOf('no-run-here')] = 'notes';
    for (const extra of [[], ['--resume']]) {
      const other = await run([...args, ...extra]);
      expect(other.code).toBe(2);
      expect(other.stderr).toMatch(/notes holds files that `agentmath eval` did not write \(plan\.md/);
    }
    expect(readdirSync(join(folder, 'notes'))).toEqual(['plan.md']);
  });

  it('resumes with the same options (defaults written out or not)', async () => {
    const result = await run([...base(), '--temperature', '0.6', '--resume']);
    expect(result.stderr).not.toMatch(/agentmath: \[/);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('avg@1 100.0%');
  });
});

describe('eval: refusals before any engine starts', () => {
  it('--out naming a file', async () => {
    const args = base();
    args[args.indexOf('run')] = 'a-file';
    const result = await run(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('a-file is a file');
    expect(result.stderr).not.toContain('--resume');
  });

  it('-k too large to plan', async () => {
    const result = await run([...base(), '-k', '99999999999']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /option '-k, --samples <n>' argument '99999999999' is invalid\. expected an integer in 1\.\.65536/,
    );
  });
});

describe('eval against a hung engine', () => {
  let hung: Server;
  let url: string;
  beforeAll(async () => {
    hung = createServer(() => {
      // accepts and never answers
    });
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    hung.closeAllConnections();
    hung.close();
  });

  it('gives up after --engine-timeout-ms, names the engine, and shows – for accuracy', async () => {
    const args = ['eval', '--bench', 'bom.jsonl', '--out', 'hung', '--engine', url, '--api', 'openai'];
    const result = await run([
      ...args,
      '--model',
      'm',
      '--engine-timeout-ms',
      '200',
      '--sandbox-workers',
      '1',
    ]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/avg@1 – {2}maj@1 – {2}code\/traj – {2}\(0\/2 trajectories\)/);
    const errors = readFileSync(join(folder, 'hung', 'errors.jsonl'), 'utf8');
    expect(errors).toContain(`${url}`);
    expect(errors).toMatch(/timed out after 200 ms/);
  }, 120_000);
});
