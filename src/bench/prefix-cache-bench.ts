/**
 * `bench prefix-cache --model DIR`: the engine's prefix cache on an agent's traffic, against the
 * same engine without it, side by side in one run.
 *
 * The workload is what the agent loop sends: C conversations at once, each T turns. Every first
 * prompt starts with the same system prompt (S tokens) and goes on with its own problem (P
 * tokens); turn k + 1's prompt is turn k's prompt, its greedy output (N tokens, EOS ignored) and
 * an interpreter's output (O tokens of its own). Without a cache every prompt is prefilled from
 * its first token; with one, the system prompt and each earlier turn come from the cache.
 *
 * Each round has its own problems (only the system prompt recurs across rounds, as in an
 * evaluation) and runs them on the engine without a cache, then on the one with it (both
 * loaded before the first round, one working at a time). Figures per engine: the workload's
 * wall time (median and slowest round), each request's latency over every round (p50, p99), the
 * share of prompt tokens the engine reported as cached (`meta_info.cached_tokens`), and the
 * ratio of the wall times. Greedy agreement: conversations whose every turn produced the same
 * tokens on both engines (a cache changes which kernels compute a position, not what it is).
 */
import { countNoun } from '../shared/count-noun.ts';
import { ascending, percentile } from '../shared/percentile.ts';
import { greedyWithLogprobs } from './engine-model-bench.ts';

/** The traffic: conversations at once, turns each, and the token counts of their parts. */
export type PrefixCacheWorkload = {
  conversations: number;
  turns: number;
  systemTokens: number;
  problemTokens: number;
  newTokens: number;
  toolTokens: number;
  rounds: number;
};

export type PrefixCacheBenchOptions = PrefixCacheWorkload & {
  /** The engine without a prefix cache (the baseline) and the one with it. */
  baselineUrl: string;
  cachedUrl: string;
  headers: Record<string, string>;
  vocabulary: number;
  onProgress?: (message: string) => void;
};

export type PrefixCacheFigures = {
  wallSecondsP50: number;
  /** The slowest round. */
  wallSecondsP99: number;
  requestSecondsP50: number;
  requestSecondsP99: number;
  /** Prompt tokens the engine took from its cache over all prompt tokens. */
  cachedShare: number;
  promptTokens: number;
};

export type PrefixCacheBenchReport = PrefixCacheWorkload & {
  baseline: PrefixCacheFigures;
  cached: PrefixCacheFigures;
  /** baseline wall p50 ÷ cached wall p50. */
  speedup: number;
  /** Conversations whose turns gave the same greedy tokens on both engines, of all. */
  greedyAgreement: { same: number; of: number };
};

/** Token ids of one part of the workload: deterministic, distinct per (part, index), in [1, vocabulary). */
export function workloadTokens(part: number, index: number, length: number, vocabulary: number): number[] {
  return Array.from(
    { length },
    (_, position) => 1 + ((part * 7919 + index * 104_729 + position * 613) % (vocabulary - 1)),
  );
}

type Turn = { outputIds: number[]; seconds: number; cachedTokens: number; promptTokens: number };

async function generate(
  url: string,
  headers: Record<string, string>,
  inputIds: number[],
  maxNewTokens: number,
): Promise<Turn> {
  const started = performance.now();
  const { outputIds, cachedTokens } = await greedyWithLogprobs(url, headers, inputIds, maxNewTokens, false);
  const seconds = (performance.now() - started) / 1000;
  return { outputIds, seconds, cachedTokens, promptTokens: inputIds.length };
}

/** One run of the workload on one engine: every conversation's turns, and the wall time. */
async function runWorkload(
  url: string,
  options: PrefixCacheBenchOptions,
  round: number,
): Promise<{ wallSeconds: number; turns: Turn[][] }> {
  const system = workloadTokens(0, 0, options.systemTokens, options.vocabulary);
  const started = performance.now();
  const turns = await Promise.all(
    Array.from({ length: options.conversations }, async (_, conversation) => {
      // Each round's problems are new: only the system prompt is shared across rounds.
      const own = round * options.conversations + conversation;
      let prompt = [...system, ...workloadTokens(1, own, options.problemTokens, options.vocabulary)];
      const done: Turn[] = [];
      for (let turn = 0; turn < options.turns; turn += 1) {
        const answer = await generate(url, options.headers, prompt, options.newTokens);
        done.push(answer);
        const tool = workloadTokens(2 + turn, own, options.toolTokens, options.vocabulary);
        prompt = [...prompt, ...answer.outputIds, ...tool];
      }
      return done;
    }),
  );
  return { wallSeconds: (performance.now() - started) / 1000, turns };
}

function figures(runs: { wallSeconds: number; turns: Turn[][] }[]): PrefixCacheFigures {
  const walls = ascending(runs.map((run) => run.wallSeconds));
  const requests = runs.flatMap((run) => run.turns.flat());
  const latencies = ascending(requests.map((turn) => turn.seconds));
  const promptTokens = requests.reduce((sum, turn) => sum + turn.promptTokens, 0);
  const cachedTokens = requests.reduce((sum, turn) => sum + turn.cachedTokens, 0);
  return {
    wallSecondsP50: percentile(walls, 0.5),
    wallSecondsP99: percentile(walls, 0.99),
    requestSecondsP50: percentile(latencies, 0.5),
    requestSecondsP99: percentile(latencies, 0.99),
    cachedShare: promptTokens === 0 ? 0 : cachedTokens / promptTokens,
    promptTokens: promptTokens / runs.length,
  };
}

export async function runPrefixCacheBench(options: PrefixCacheBenchOptions): Promise<PrefixCacheBenchReport> {
  const baselineRuns: Awaited<ReturnType<typeof runWorkload>>[] = [];
  const cachedRuns: Awaited<ReturnType<typeof runWorkload>>[] = [];
  for (let round = 0; round < options.rounds; round += 1) {
    baselineRuns.push(await runWorkload(options.baselineUrl, options, round));
    cachedRuns.push(await runWorkload(options.cachedUrl, options, round));
    options.onProgress?.(
      `round ${round + 1}/${options.rounds}: without cache ${baselineRuns.at(-1)!.wallSeconds.toFixed(1)} s, with ${cachedRuns.at(-1)!.wallSeconds.toFixed(1)} s`,
    );
  }
  const baseline = figures(baselineRuns);
  const cached = figures(cachedRuns);
  const tokens = (turns: Turn[]) => turns.map((turn) => turn.outputIds.join(',')).join('|');
  const first = baselineRuns[0]!.turns;
  const same = first.filter((turns, index) => tokens(turns) === tokens(cachedRuns[0]!.turns[index]!)).length;
  const { conversations, turns, systemTokens, problemTokens, newTokens, toolTokens, rounds } = options;
  return {
    ...{ conversations, turns, systemTokens, problemTokens, newTokens, toolTokens, rounds },
    baseline,
    cached,
    speedup: baseline.wallSecondsP50 / cached.wallSecondsP50,
    greedyAgreement: { same, of: first.length },
  };
}

export function renderPrefixCacheBench(report: PrefixCacheBenchReport): string {
  const row = (name: string, figures: PrefixCacheFigures) =>
    `${name.padEnd(16)}  workload ${figures.wallSecondsP50.toFixed(2)} s p50 / ${figures.wallSecondsP99.toFixed(2)} s p99, ` +
    `request ${figures.requestSecondsP50.toFixed(2)} s p50 / ${figures.requestSecondsP99.toFixed(2)} s p99, ` +
    `prompt tokens cached ${(100 * figures.cachedShare).toFixed(1)}%`;
  return [
    row('no prefix cache', report.baseline),
    row('prefix cache', report.cached),
    `speedup (workload p50): ×${report.speedup.toFixed(2)}; greedy tokens equal in ${report.greedyAgreement.same} of ${report.greedyAgreement.of} conversations`,
    `(${report.conversations} conversations × ${report.turns} turns at once: system prompt ${report.systemTokens} + problem ${report.problemTokens} tokens, ${report.newTokens} new tokens a turn, ${report.toolTokens} interpreter tokens between turns; ${countNoun(report.rounds, 'round')}, the two engines alternating)`,
    '',
  ].join('\n');
}
