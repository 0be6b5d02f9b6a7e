/**
 * Progress of a job made of labelled parts (the quickstarts' models and stages) on a stream:
 * a line `[label] text` for each thing that happened, and, on a terminal, one status line
 * redrawn under them with the latest status of every running part; on a log (no terminal),
 * a status becomes a plain line each tenth of the way instead.
 */
import type { EvalProgress } from '../eval/eval-runner.ts';

export type StageProgress = {
  /** A line that stays. */
  log: (label: string, text: string) => void;
  /** The part's current status, `done` of `total` (a log gets a line each tenth of the way). */
  status: (label: string, text: string, done: number, total: number) => void;
  /** The part has no status any more. */
  clear: (label: string) => void;
  /** Removes the status line (before the final output). */
  finish: () => void;
};

export function createStageProgress(stream: NodeJS.WriteStream): StageProgress {
  const tty = stream.isTTY === true;
  const statuses = new Map<string, string>();
  const lastLoggedTenth = new Map<string, number>();
  let drawn = false;
  const erase = () => {
    if (tty && drawn) stream.write('\r\x1b[2K');
    drawn = false;
  };
  const redraw = () => {
    if (!tty || statuses.size === 0) return;
    const text = [...statuses.entries()].map(([label, line]) => `${label}: ${line}`).join('  │  ');
    stream.write(`\r\x1b[2K${text.slice(0, (stream.columns ?? 160) - 1)}`);
    drawn = true;
  };
  return {
    log: (label, text) => {
      erase();
      stream.write(`[${label}] ${text}\n`);
      redraw();
    },
    status: (label, text, done, total) => {
      statuses.set(label, text);
      if (tty) {
        redraw();
        return;
      }
      const tenth = Math.floor((10 * done) / Math.max(1, total));
      if ((lastLoggedTenth.get(label) ?? -1) >= tenth) return;
      lastLoggedTenth.set(label, tenth);
      stream.write(`[${label}] ${text}\n`);
    },
    clear: (label) => {
      statuses.delete(label);
      lastLoggedTenth.delete(label);
    },
    finish: erase,
  };
}

/** An evaluation's status: done of total, accuracy and code calls so far. */
export function evalStatus({ done, total, correct, codeCalls }: EvalProgress): string {
  return (
    `eval ${done}/${total} accuracy ${done === 0 ? '–' : percent(correct / done)} ` +
    `code/traj ${done === 0 ? '–' : (codeCalls / done).toFixed(2)}`
  );
}

/** `94.0%`. */
export function percent(value: number): string {
  return `${(100 * value).toFixed(1)}%`;
}
