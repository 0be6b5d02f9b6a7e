/**
 * `agentmath bench rollout`: the same workload run side by side in four configurations on the
 * same replicas — static synchronous batches, request-level async, + agent partial rollout,
 * + the prefix-aware router — each for several steps from a fresh state, printing step wall
 * time p50/p99, tokens/s and the speedup over static sync (p50 of static sync over p50 of the
 * configuration). The first three configurations route round-robin, as the paper's baseline.
 */
import { SessionPark } from '../agent/session-park.ts';
import { createRouterPolicy } from '../engine/router/create-router-policy.ts';
import { Router, type RouterReplica } from '../engine/router/router.ts';
import type { RouterPolicyName } from '../engine/router/router-policy.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import type { Dialect } from '../protocol/dialect.ts';
import type { SandboxProvider } from '../sandbox/types.ts';
import type { Clock } from '../shared/clock.ts';
import { ascending, percentile } from '../shared/percentile.ts';
import { type RolloutConfigInput, rolloutConfigSchema } from './rollout-config.ts';
import { initialRolloutState, runRolloutStep } from './run-rollout-step.ts';
import type { RolloutParts, RolloutProblem, RolloutState, StepStats } from './types.ts';

export type RolloutBenchConfiguration = {
  name: string;
  mode: 'async' | 'sync';
  partialRollout: boolean;
  router: RouterPolicyName;
};

export const ROLLOUT_BENCH_CONFIGURATIONS: readonly RolloutBenchConfiguration[] = [
  { name: 'static-sync', mode: 'sync', partialRollout: false, router: 'round-robin' },
  { name: 'async', mode: 'async', partialRollout: false, router: 'round-robin' },
  { name: 'async+partial', mode: 'async', partialRollout: true, router: 'round-robin' },
  { name: 'async+partial+prefix-aware', mode: 'async', partialRollout: true, router: 'prefix-aware' },
];

export type RolloutBenchOptions = {
  replicas: readonly RouterReplica[];
  tokenizer: Tokenizer;
  dialect: Dialect;
  sandbox: SandboxProvider;
  grade: RolloutParts['grade'];
  prompt?: RolloutParts['prompt'];
  clock: Clock;
  random: () => number;
  problems: readonly RolloutProblem[];
  steps: number;
  /** Shared by every configuration (mode and partial rollout are set per configuration). */
  config: RolloutConfigInput;
  temperature: number;
  configurations?: readonly RolloutBenchConfiguration[];
  onStep?: (configuration: string, stats: StepStats) => void;
};

export type RolloutBenchRow = {
  name: string;
  stepMsP50: number;
  stepMsP99: number;
  tokensPerSecond: number;
  /** p50 step time of static sync over this configuration's. */
  speedup: number;
  steps: StepStats[];
};

export async function runRolloutBench(options: RolloutBenchOptions): Promise<RolloutBenchRow[]> {
  const rows: Omit<RolloutBenchRow, 'speedup'>[] = [];
  for (const configuration of options.configurations ?? ROLLOUT_BENCH_CONFIGURATIONS) {
    const router = new Router({
      replicas: options.replicas,
      policy: createRouterPolicy(configuration.router),
      clock: options.clock,
    });
    const config = rolloutConfigSchema.parse({
      ...options.config,
      mode: configuration.mode,
      partialRollout: configuration.partialRollout,
    });
    const park = new SessionPark();
    let state: RolloutState = initialRolloutState();
    let taken = 0;
    const steps: StepStats[] = [];
    try {
      for (let step = 0; step < options.steps; step++) {
        let takenThisStep = 0;
        const problems = {
          next: () => {
            if (takenThisStep++ >= options.problems.length) return null;
            return options.problems[taken++ % options.problems.length] ?? null;
          },
        };
        const result = await runRolloutStep(
          {
            step,
            policyVersion: 0,
            state,
            problems,
            config,
            agent: { sampling: { temperature: options.temperature, topP: 1 } },
          },
          {
            engine: router,
            routerName: configuration.router,
            tokenizer: options.tokenizer,
            dialect: options.dialect,
            sandbox: options.sandbox,
            park,
            grade: options.grade,
            clock: options.clock,
            random: options.random,
            ...(options.prompt === undefined ? {} : { prompt: options.prompt }),
          },
        );
        state = result.state;
        steps.push(result.stats);
        options.onStep?.(configuration.name, result.stats);
      }
    } finally {
      await park.closeAll().catch(() => {});
    }
    const wall = ascending(steps.map((stats) => stats.wallMs));
    const totalMs = steps.reduce((sum, stats) => sum + stats.wallMs, 0);
    const tokens = steps.reduce((sum, stats) => sum + stats.tokensGenerated, 0);
    rows.push({
      name: configuration.name,
      stepMsP50: percentile(wall, 0.5),
      stepMsP99: percentile(wall, 0.99),
      tokensPerSecond: totalMs === 0 ? 0 : (1000 * tokens) / totalMs,
      steps,
    });
  }
  const baseline = rows[0]?.stepMsP50 ?? Number.NaN;
  return rows.map((row) => ({ ...row, speedup: baseline / row.stepMsP50 }));
}
