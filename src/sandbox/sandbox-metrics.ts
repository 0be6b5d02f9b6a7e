/**
 * Prometheus text metrics of a sandbox node: calls by status, a call latency histogram,
 * HTTP errors by status code, sessions and workers. Hand-written exposition format.
 */
import type { LocalSandboxStats } from './local-sandbox-pool.ts';

const BUCKETS_SECONDS = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export class SandboxMetrics {
  readonly #calls = new Map<string, number>();
  readonly #httpErrors = new Map<number, number>();
  readonly #bucketCounts = BUCKETS_SECONDS.map(() => 0);
  #latencySum = 0;
  #latencyCount = 0;

  /** Records one executed call (server-side latency, seconds). */
  recordCall(status: string, seconds: number): void {
    this.#calls.set(status, (this.#calls.get(status) ?? 0) + 1);
    this.#latencySum += seconds;
    this.#latencyCount += 1;
    BUCKETS_SECONDS.forEach((bound, index) => {
      if (seconds <= bound) this.#bucketCounts[index]! += 1;
    });
  }

  recordHttpError(statusCode: number): void {
    this.#httpErrors.set(statusCode, (this.#httpErrors.get(statusCode) ?? 0) + 1);
  }

  /** The exposition text. */
  render(stats: LocalSandboxStats): string {
    const lines: string[] = [];
    lines.push('# HELP agentmath_sandbox_calls_total Code cells executed, by outcome status.');
    lines.push('# TYPE agentmath_sandbox_calls_total counter');
    for (const [status, count] of this.#calls)
      lines.push(`agentmath_sandbox_calls_total{status="${status}"} ${count}`);
    lines.push('# HELP agentmath_sandbox_call_seconds Server-side latency of code cells.');
    lines.push('# TYPE agentmath_sandbox_call_seconds histogram');
    BUCKETS_SECONDS.forEach((bound, index) => {
      lines.push(`agentmath_sandbox_call_seconds_bucket{le="${bound}"} ${this.#bucketCounts[index]}`);
    });
    lines.push(`agentmath_sandbox_call_seconds_bucket{le="+Inf"} ${this.#latencyCount}`);
    lines.push(`agentmath_sandbox_call_seconds_sum ${this.#latencySum}`);
    lines.push(`agentmath_sandbox_call_seconds_count ${this.#latencyCount}`);
    lines.push('# HELP agentmath_sandbox_http_errors_total Requests answered with a 4xx or 5xx status.');
    lines.push('# TYPE agentmath_sandbox_http_errors_total counter');
    for (const [code, count] of this.#httpErrors)
      lines.push(`agentmath_sandbox_http_errors_total{code="${code}"} ${count}`);
    lines.push('# HELP agentmath_sandbox_sessions Open sessions.');
    lines.push('# TYPE agentmath_sandbox_sessions gauge');
    lines.push(`agentmath_sandbox_sessions ${stats.sessions}`);
    lines.push('# HELP agentmath_sandbox_max_sessions Most sessions this node holds at once.');
    lines.push('# TYPE agentmath_sandbox_max_sessions gauge');
    lines.push(`agentmath_sandbox_max_sessions ${stats.maxSessions}`);
    lines.push('# HELP agentmath_sandbox_workers Jailed workers, by state.');
    lines.push('# TYPE agentmath_sandbox_workers gauge');
    lines.push(`agentmath_sandbox_workers{state="idle"} ${stats.idleWorkers}`);
    lines.push(`agentmath_sandbox_workers{state="starting"} ${stats.startingWorkers}`);
    lines.push(`agentmath_sandbox_workers{state="bound"} ${stats.boundWorkers}`);
    lines.push('# HELP agentmath_sandbox_workers_started_total Workers started since the node began.');
    lines.push('# TYPE agentmath_sandbox_workers_started_total counter');
    lines.push(`agentmath_sandbox_workers_started_total ${stats.workersStarted}`);
    return `${lines.join('\n')}\n`;
  }
}
