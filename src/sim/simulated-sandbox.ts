/**
 * A sandbox in virtual time, implementing `SandboxProvider`: a cluster of `workers` that run
 * one call each; a call waits in arrival order when all are busy, then takes a latency drawn
 * from the workload's distribution (lognormal with its tail, clipped), or the one the plan
 * fixed. The code is the one a simulated plan writes (`print(sim_output(N))`, or
 * `print(sim_output(N, latency_ms=L))` for a replayed call): it prints N characters. Anything else is
 * answered with a Python-style error outcome, as a real interpreter would answer unknown code.
 */
import type { ExecutionOutcome, SandboxProvider, SandboxSession } from '../sandbox/types.ts';
import type { Random } from '../tasks/seeded-random.ts';
import { type Distribution, sample } from './distribution.ts';
import type { VirtualClock } from './virtual-clock.ts';

const PLANNED_CODE = /^print\(sim_output\((\d+)(?:, latency_ms=(\d+))?\)\)$/;

export type SimulatedSandboxOptions = {
  clock: VirtualClock;
  workers: number;
  latencyMs: Distribution;
  random: Random;
};

export type SimulatedSandboxMetrics = { calls: number; busyMs: number; queuedMs: number };

export class SimulatedSandbox implements SandboxProvider {
  readonly #clock: VirtualClock;
  readonly #latency: Distribution;
  readonly #random: Random;
  #free: number;
  readonly #queue: (() => void)[] = [];
  #nextId = 0;
  readonly #metrics: SimulatedSandboxMetrics = { calls: 0, busyMs: 0, queuedMs: 0 };

  constructor({ clock, workers, latencyMs, random }: SimulatedSandboxOptions) {
    this.#clock = clock;
    this.#free = workers;
    this.#latency = latencyMs;
    this.#random = random;
  }

  metrics(): SimulatedSandboxMetrics {
    return { ...this.#metrics };
  }

  async openSession(): Promise<SandboxSession> {
    const id = `sim-session-${this.#nextId++}`;
    return {
      id,
      execute: (code) => this.#execute(code),
      close: async () => {},
    };
  }

  async close(): Promise<void> {}

  async #execute(code: string): Promise<ExecutionOutcome> {
    const queuedAt = this.#clock.now();
    if (this.#free > 0) this.#free--;
    else await new Promise<void>((resolve) => this.#queue.push(resolve));
    const match = PLANNED_CODE.exec(code.trim());
    const ms = match?.[2] === undefined ? sample(this.#latency, this.#random) : Number(match[2]);
    this.#metrics.calls++;
    this.#metrics.busyMs += ms;
    this.#metrics.queuedMs += this.#clock.now() - queuedAt;
    await this.#clock.sleep(ms);
    const next = this.#queue.shift();
    if (next === undefined) this.#free++;
    else next();
    if (match === null) {
      return {
        status: 'error',
        stdout: '',
        stderr: '',
        exception: "NameError: name 'sim_output' is not used as planned",
        ms,
      };
    }
    const characters = Number(match[1]);
    return {
      status: 'ok',
      stdout: characters === 0 ? '' : `${'y'.repeat(characters - 1)}\n`,
      stderr: '',
      ms,
    };
  }
}
