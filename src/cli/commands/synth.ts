/**
 * `agentmath synth run`: text solutions to refined tool-augmented trajectories with a teacher
 * behind an OpenAI-compatible chat API (key from OPENAI_API_KEY, never printed);
 * `agentmath synth ablation`: the refinement ablation offline with the arith teacher.
 * Progress goes to stderr, the summary to stdout.
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { resolveDataDir } from '../../eval/benchmark-data-dir.ts';
import { createLocalSandbox } from '../../sandbox/index.ts';
import { AgentMathError } from '../../shared/agentmath-error.ts';
import { acquireRunFolderLock } from '../../shared/run-folder-lock.ts';
import { assertReadableFile, STDIN_PATH } from '../../shared/text-input.ts';
import {
  assertSynthFolder,
  OpenAiTeacher,
  parseFieldMapping,
  parseStages,
  renderAblationTable,
  resolveSynthConfig,
  runAblation,
  runSynth,
  type SynthEvent,
  type SynthFieldMapping,
  type SynthStage,
} from '../../synth/index.ts';
import { formatSftEvent } from '../../train/index.ts';
import { choiceOption, httpUrlOption, integerOption, numberOption } from '../cli-options.ts';
import { holdSignals, interruptSignal, onShutdown } from '../process-lifecycle.ts';

function numberFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed) || parsed < 0) {
    throw new AgentMathError('CLI_BAD_OPTION', `--${name} must be a number >= 0 (got "${value}")`);
  }
  return parsed;
}

function formatDuration(ms: number | null): string {
  if (ms === null) return '?';
  const seconds = Math.round(ms / 1000);
  return seconds >= 3600
    ? `${Math.floor(seconds / 3600)}h${Math.floor((seconds % 3600) / 60)}m`
    : `${Math.floor(seconds / 60)}m${seconds % 60}s`;
}

function progressLine(event: SynthEvent): string | null {
  if (event.type === 'synth-start') {
    return `synth: ${event.total} records (${event.resumed} already done, ${event.skippedRows} input rows skipped); decontamination files: ${event.indexedFiles.length}`;
  }
  if (event.type === 'synth-progress') {
    const width = 24;
    const filled = Math.round((event.done / Math.max(1, event.total)) * width);
    return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${event.done}/${event.total} kept ${event.kept} · ETA ${formatDuration(event.etaMs)} · teacher ${event.requests} req, ${event.teacherTokens} tok, $${event.costUsd.toFixed(4)}`;
  }
  return null;
}

function synthProgress(): (event: SynthEvent) => void {
  const tty = process.stderr.isTTY === true;
  let last = 0;
  return (event) => {
    const line = progressLine(event);
    if (line === null) return;
    if (event.type === 'synth-progress' && tty) {
      process.stderr.write(`\r\x1b[2K${line}${event.done === event.total ? '\n' : ''}`);
      return;
    }
    if (event.type === 'synth-progress' && Date.now() - last < 10_000 && event.done !== event.total) return;
    last = Date.now();
    process.stderr.write(`${line}\n`);
  };
}

type RunFlags = {
  input: string;
  teacher: string;
  model: string;
  out: string;
  fields?: SynthFieldMapping;
  stages?: SynthStage[];
  concurrency?: number;
  rateLimit?: number;
  resume?: boolean;
  decontaminate?: string[];
  ngram?: number;
  dataDir?: string;
  prompt?: string;
  onMismatch?: 'drop' | 'regenerate';
  trivial?: 'to-text' | 'drop';
  maxTrivialLines?: number;
  maxTrivialDepth?: number;
  trivialConstantBelow?: number;
  maxTokens?: number;
  temperature?: number;
  limit?: number;
  priceInput?: number;
  priceOutput?: number;
  json?: boolean;
};

/** A commander parser from one that throws an AgentMathError (its message becomes the usage error). */
function asOption<T>(parse: (value: string) => T): (value: string) => T {
  return (value: string) => {
    try {
      return parse(value);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  };
}

const whole = (min: number) => integerOption({ min });
const positiveNumber = numberOption({ min: 0 });

export function registerSynth(program: Command): void {
  const synth = program
    .command('synth')
    .description('data synthesis: text solutions to refined tool-augmented trajectories');
  synth
    .command('run')
    .description(
      'rewrite text solutions with a teacher, refine them, inject self-correction; write trajectories.jsonl, sharegpt.json, verl.parquet, stats.json',
    )
    .requiredOption('--input <file>', 'JSONL or Parquet input (- reads JSONL from standard input)')
    .requiredOption(
      '--teacher <url>',
      'OpenAI-compatible base URL of the teacher (key from OPENAI_API_KEY)',
      httpUrlOption,
    )
    .requiredOption('--model <name>', 'teacher model name')
    .requiredOption('--out <dir>', 'run folder')
    .option(
      '--fields <map>',
      'field mapping, e.g. problem=question,solution=cot,answer=gt,id=uid (default id,problem,solution,answer)',
      asOption(parseFieldMapping),
    )
    .option(
      '--stages <list>',
      'stages on: decontaminate,format,executability,alignment,rationality,answer,self-correction (default all)',
      asOption((value: string) => parseStages(value) ?? []),
    )
    .option('--concurrency <n>', 'records in flight (default 8)', integerOption({ min: 1, max: 4096 }))
    .option('--rate-limit <n>', 'teacher requests per minute (default 0 = unlimited)', positiveNumber)
    .option('--resume', 'continue the run in --out; refuses a different configuration')
    .option('--decontaminate <file...>', 'extra JSONL files (field problem) to decontaminate against')
    .option('--ngram <n>', 'decontamination n-gram size (default 8)', whole(1))
    .option(
      '--data-dir <dir>',
      'benchmark folder (default AGENTMATH_DATA_DIR, else shared/data/benchmarks found upward)',
    )
    .option(
      '--prompt <file>',
      'rewrite prompt file with {{problem}} and {{solution}} (default src/synth/prompts/rewrite.md)',
    )
    .option(
      '--on-mismatch <mode>',
      'drop or regenerate a continuation the real output breaks (default drop)',
      choiceOption(['drop', 'regenerate'] as const),
    )
    .option(
      '--trivial <mode>',
      'to-text or drop for trivial code blocks (default to-text)',
      choiceOption(['to-text', 'drop'] as const),
    )
    .option('--max-trivial-lines <n>', 'a trivial block has at most this many lines (default 1)', whole(0))
    .option('--max-trivial-depth <n>', 'and at most this AST depth (default 6)', whole(0))
    .option(
      '--trivial-constant-below <n>',
      'and only numeric constants below this (default 100)',
      positiveNumber,
    )
    .option('--max-tokens <n>', 'teacher max_tokens (default 4096)', whole(1))
    .option('--temperature <t>', 'teacher temperature (default 0.6)', numberOption({ min: 0, max: 100 }))
    .option('--limit <n>', 'process only the first N records', whole(1))
    .option(
      '--price-input <usd>',
      'USD per million prompt tokens, for the cost shown (default 0)',
      positiveNumber,
    )
    .option('--price-output <usd>', 'USD per million completion tokens (default 0)', positiveNumber)
    .option('--json', 'print stats.json to stdout')
    .action(async (flags: RunFlags) => {
      process.exitCode = await synthRunCommand(flags);
    });

  synth
    .command('ablation')
    .description(
      'offline refinement ablation: arith teacher with noise, six models trained and evaluated, table beside the paper',
    )
    .option(
      '--out <dir>',
      'folder for data, models and the table (default runs/synth-ablation)',
      'runs/synth-ablation',
    )
    .option('--problems <n>', 'training problems synthesised (default 2000)', '2000')
    .option('--steps <n>', 'training steps per model (default 300)', '300')
    .option('--eval-problems <n>', 'held-out arith problems per model (default 160)', '160')
    .option('--seed <n>', 'problems, weights and data order seed (default 1)', '1')
    .option('--threads <n>', 'torch threads per training step (default 1)', '1')
    .option('--data-dir <dir>', 'benchmark folder for decontamination')
    .action(
      async (flags: {
        out: string;
        problems: string;
        steps: string;
        evalProblems: string;
        seed: string;
        threads: string;
        dataDir?: string;
      }) => {
        const sandbox = createLocalSandbox({ maxWorkers: 4, warmWorkers: 0 });
        try {
          const rows = await runAblation({
            out: flags.out,
            problems: numberFlag('problems', flags.problems)!,
            steps: numberFlag('steps', flags.steps)!,
            evalProblems: numberFlag('eval-problems', flags.evalProblems)!,
            seed: numberFlag('seed', flags.seed)!,
            threads: numberFlag('threads', flags.threads)!,
            dataDir: resolveDataDir({ dataDir: flags.dataDir }),
            sandbox,
            onLine: (line) => process.stderr.write(`${line}\n`),
            onSftEvent: (event) => {
              const line =
                event.type === 'train-step'
                  ? event.step % 100 === 0
                    ? `step ${event.step}/${event.totalSteps} loss ${(event.loss ?? Number.NaN).toFixed(3)}`
                    : null
                  : formatSftEvent(event);
              if (line !== null) process.stderr.write(`${line}\n`);
            },
          });
          process.stdout.write(renderAblationTable(rows, `written to ${flags.out}/ablation.md`));
        } finally {
          await sandbox.close();
        }
      },
    );
}

async function synthRunCommand(flags: RunFlags): Promise<number> {
  const entries: [string, unknown][] = [
    ['stages', flags.stages],
    ['concurrency', flags.concurrency],
    ['ratePerMinute', flags.rateLimit],
    ['ngram', flags.ngram],
    ['prompt', flags.prompt],
    ['onMismatch', flags.onMismatch],
    ['trivial', flags.trivial],
    ['maxTrivialLines', flags.maxTrivialLines],
    ['maxTrivialDepth', flags.maxTrivialDepth],
    ['trivialConstantBelow', flags.trivialConstantBelow],
    ['maxTokens', flags.maxTokens],
    ['temperature', flags.temperature],
    ['limit', flags.limit],
    ['priceInputPerMillion', flags.priceInput],
    ['priceOutputPerMillion', flags.priceOutput],
  ];
  const config = resolveSynthConfig({
    input: flags.input,
    teacher: flags.teacher,
    model: flags.model,
    fields: flags.fields ?? parseFieldMapping(undefined),
    decontaminate: flags.decontaminate ?? [],
    dataDir: resolveDataDir({ dataDir: flags.dataDir }),
    ...Object.fromEntries(entries.filter(([, value]) => value !== undefined)),
  });
  const out = resolve(flags.out);
  // The folder, the identity, the files named on the command line and the lock, before any
  // process starts or anything is written.
  await assertSynthFolder(out, config, flags.resume === true);
  if (flags.input !== STDIN_PATH) assertReadableFile(flags.input, '--input');
  if (flags.prompt !== undefined) assertReadableFile(flags.prompt, '--prompt');
  for (const file of flags.decontaminate ?? []) assertReadableFile(file, '--decontaminate');
  const releaseLock = await acquireRunFolderLock(out, { command: 'synth run' });
  const unregisterLock = onShutdown(releaseLock);
  const teacher = new OpenAiTeacher({
    baseUrl: flags.teacher,
    model: flags.model,
    apiKey: process.env.OPENAI_API_KEY,
  });
  const sandbox = createLocalSandbox({
    maxWorkers: Math.max(2, Math.min(16, config.concurrency)),
    warmWorkers: 0,
  });
  const unregisterSandbox = onShutdown(() => sandbox.close());
  const release = holdSignals();
  try {
    const stats = await runSynth({
      dir: out,
      config,
      teacher,
      sandbox,
      onEvent: synthProgress(),
      signal: interruptSignal(),
      ...(flags.resume ? { resume: true } : {}),
    });
    if (flags.json) process.stdout.write(`${JSON.stringify(stats, null, 2)}\n`);
    else {
      const reasons = Object.entries(stats.dropped).flatMap(([stage, byReason]) =>
        Object.entries(byReason).map(([reason, { count }]) => `  ${stage}/${reason}: ${count}`),
      );
      const failed = stats.teacher.failed > 0 ? ` (${stats.teacher.failed} failed after every retry)` : '';
      process.stdout.write(
        `kept ${stats.kept} of ${stats.records} records (${stats.inputSkipped.count} input rows skipped)\n${reasons.join('\n')}${reasons.length ? '\n' : ''}teacher: ${stats.teacher.requests} requests${failed}, ${stats.teacher.promptTokens + stats.teacher.completionTokens} tokens, $${stats.teacher.costUsd.toFixed(4)}\nwritten to ${out}\n`,
      );
    }
    if (stats.outages.count === 0) return 0;
    const causes = Object.entries(stats.outages.causes)
      .sort((left, right) => right[1] - left[1])
      .map(([cause, count]) => `  ${count} × ${cause}`);
    process.stderr.write(
      `${stats.outages.count} of ${stats.records} records were lost to an outage (not a result; they are retried):\n${causes.join('\n')}\n` +
        `fix the cause, then continue with --resume --out ${out} (same options)\n`,
    );
    return 1;
  } finally {
    release();
    unregisterSandbox();
    await sandbox.close();
    unregisterLock();
    await releaseLock();
  }
}
