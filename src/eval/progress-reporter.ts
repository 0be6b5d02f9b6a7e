/**
 * Progress display for an evaluation run, on stderr: on a terminal, one bar redrawn in place
 * (done/total, running accuracy, code calls per trajectory, failures, ETA); elsewhere, a plain line each
 * time another `everyPercent` of the work is done, so logs stay short.
 */
import type { EvalProgress } from './eval-runner.ts';

export type ProgressReporter = {
  update(progress: EvalProgress): void;
  /** Ends the bar's line on a terminal. */
  finish(): void;
};

/** The one-line progress text; `elapsedMs` counts only this invocation. */
export function formatProgress(progress: EvalProgress, elapsedMs: number, barWidth = 24): string {
  const { done, total, doneAtStart, correct, codeCalls, running, failed, gradeUnavailable } = progress;
  const withVerdict = done - gradeUnavailable;
  const fraction = total === 0 ? 1 : done / total;
  const filled = Math.round(fraction * barWidth);
  const bar = `${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}`;
  const accuracy = withVerdict === 0 ? '–' : `${((100 * correct) / withVerdict).toFixed(1)}%`;
  const tools = done === 0 ? '–' : (codeCalls / done).toFixed(2);
  const newlyDone = done - doneAtStart;
  const eta =
    done >= total ? '0s' : newlyDone === 0 ? '?' : formatDuration((elapsedMs / newlyDone) * (total - done));
  const errors =
    (failed > 0 ? ` | failed ${failed}` : '') +
    (gradeUnavailable > 0 ? ` | no verdict ${gradeUnavailable}` : '');
  return `${bar} ${done}/${total} ${(100 * fraction).toFixed(0)}% | acc ${accuracy} | code/traj ${tools} | running ${running}${errors} | ETA ${eta}`;
}

/** "1h02m", "3m05s", "42s". */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const rest = seconds % 60;
  if (hours > 0) return `${hours}h${String(minutes).padStart(2, '0')}m`;
  if (minutes > 0) return `${minutes}m${String(rest).padStart(2, '0')}s`;
  return `${rest}s`;
}

/** A reporter writing to `stream` (a bar when `isTTY`, plain lines otherwise). */
export function createProgressReporter({
  stream,
  isTTY,
  everyPercent = 10,
  now = Date.now,
}: {
  stream: { write(text: string): unknown };
  isTTY: boolean;
  everyPercent?: number;
  now?: () => number;
}): ProgressReporter {
  const startedAt = now();
  let lastStep = -1;
  let drawn = false;
  return {
    update(progress) {
      const line = formatProgress(progress, now() - startedAt);
      if (isTTY) {
        stream.write(`\r\u001b[2K${line}`);
        drawn = true;
        return;
      }
      const percent = progress.total === 0 ? 100 : (100 * progress.done) / progress.total;
      const step = Math.floor(percent / everyPercent);
      if (step > lastStep) {
        lastStep = step;
        stream.write(`${line}\n`);
      }
    },
    finish() {
      if (isTTY && drawn) stream.write('\n');
    },
  };
}
