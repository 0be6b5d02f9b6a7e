/**
 * Time as a parameter. Everything that waits or measures (the agent loop, engine calls, the
 * rollout scheduler, the router, back-off, sweepers) takes a `Clock`, so the simulator can drive
 * the real code in virtual time and tests can run it on a manual clock. Production passes
 * `systemClock`.
 */
import { abortableSleep } from './abortable-sleep.ts';

export interface Clock {
  /** Milliseconds; only differences are meaningful. */
  now(): number;
  /** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock: `performance.now()` and timers. */
export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: async (ms, signal) => {
    await abortableSleep(ms, signal);
  },
};
