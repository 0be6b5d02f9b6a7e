/**
 * Runs a callback every `ms` on a clock until stopped. On the system clock it is an unref'd
 * interval (a forgotten owner never keeps the process alive); on any other clock it is a loop
 * of `clock.sleep`, so virtual time drives it and no real timer is involved.
 */
import { type Clock, systemClock } from './clock.ts';

/** Starts the repetition; call the returned function to stop it. */
export function everyInterval(clock: Clock, ms: number, tick: () => void): () => void {
  if (clock === systemClock) {
    const interval = setInterval(tick, ms);
    interval.unref();
    return () => clearInterval(interval);
  }
  const stop = new AbortController();
  void (async () => {
    while (!stop.signal.aborted) {
      await clock.sleep(ms, stop.signal);
      if (!stop.signal.aborted) tick();
    }
  })();
  return () => stop.abort();
}
