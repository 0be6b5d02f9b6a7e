/**
 * Keeps many trajectories from monopolising the event loop. Loop work runs in slices of at
 * most `SLICE_MS`; a trajectory that arrives when the current slice is spent waits for the
 * next timers phase, so timers and I/O (other engines' replies, servers in the process) run
 * in between. When the process is idle this costs one clock read and nothing else.
 */

const SLICE_MS = 5;
let sliceStartedAt: number | null = null;

function endSlice(): void {
  sliceStartedAt = null;
}

/** Null when the caller may go on now; else a promise that resolves in a later slice. */
export function yieldIfBusy(): Promise<void> | null {
  return enterSlice() ? null : waitForSlice();
}

/** Whether work may run in the current slice (opening one if none is open). */
function enterSlice(): boolean {
  const now = performance.now();
  if (sliceStartedAt === null) {
    sliceStartedAt = now;
    // Fires at the next timers phase: the event loop got its turn, a new slice may start.
    setTimeout(endSlice, 0).unref();
    return true;
  }
  return now - sliceStartedAt < SLICE_MS;
}

async function waitForSlice(): Promise<void> {
  do await new Promise<void>((resolve) => setTimeout(resolve, 0));
  while (!enterSlice());
}
