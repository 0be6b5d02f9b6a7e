/**
 * The body of a rendered tool result, shared by every dialect: output truncated head + tail
 * with a marker saying how much was cut, the last lines of a traceback for errors, and a
 * plain statement the model can act on for timeouts, memory limits and killed sessions.
 * The dialect wraps this body in its own markup.
 */
import type { ExecutionOutcome } from '../shared/execution-outcome.ts';
import type { RenderOptions } from './dialect.ts';

/** Output kept by default (characters), and traceback lines kept by default. */
export const DEFAULT_MAX_OUTPUT_CHARS = 2000;
export const DEFAULT_TRACEBACK_LINES = 8;
const MAX_LINE_CHARS = 400;

/** The text the model reads for an outcome, without the dialect's markup; never empty. */
export function renderOutcomeBody(outcome: ExecutionOutcome, options: RenderOptions = {}): string {
  const { maxChars = DEFAULT_MAX_OUTPUT_CHARS, tracebackLines = DEFAULT_TRACEBACK_LINES } = options;
  const pieces: string[] = [];
  switch (outcome.status) {
    case 'ok':
      pieces.push(truncateMiddle(joinStreams(outcome.stdout, outcome.stderr), maxChars));
      break;
    case 'error':
      pieces.push(truncateMiddle(outcome.stdout, maxChars));
      pieces.push(tracebackTail(outcome.exception.trim() || outcome.stderr.trim(), tracebackLines));
      break;
    case 'timeout':
      pieces.push(truncateMiddle(outcome.stdout, maxChars));
      pieces.push(
        `TimeoutError: the code ran longer than the ${formatSeconds(outcome.limitMs)} limit and was stopped.`,
      );
      break;
    case 'memory-exceeded':
      pieces.push(
        `MemoryError: the code used more than the ${formatBytes(outcome.limitBytes)} memory limit and was stopped.`,
      );
      break;
    case 'killed':
      pieces.push(
        `SessionReset: the Python session was killed (${outcome.reason}). Its state is gone: variables, ` +
          'functions and imports from earlier code blocks no longer exist; define them again before use.',
      );
      break;
  }
  const body = pieces
    .map((piece) => piece.replace(/\s+$/, ''))
    .filter((piece) => piece !== '')
    .join('\n');
  return body === '' ? '(no output)' : body;
}

/**
 * Keeps the first and last `maxChars / 2` characters and replaces the middle with a marker
 * naming how many characters were cut. Text within the limit is returned as is.
 */
export function truncateMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const headChars = Math.ceil(maxChars / 2);
  const tailChars = Math.max(0, maxChars - headChars);
  const cut = text.length - headChars - tailChars;
  const tail = tailChars === 0 ? '' : text.slice(text.length - tailChars);
  return `${text.slice(0, headChars)}\n... [${cut} characters cut] ...\n${tail}`;
}

/** The last `lines` lines of a traceback, keeping its first line and saying how many were cut. */
export function tracebackTail(traceback: string, lines: number): string {
  const all = traceback.split('\n').map((line) => truncateMiddle(line, MAX_LINE_CHARS));
  if (all.length <= lines) return all.join('\n');
  const first = all[0] ?? '';
  const keepFirst = first.startsWith('Traceback');
  const kept = all.slice(all.length - lines);
  const cut = all.length - kept.length - (keepFirst ? 1 : 0);
  return [...(keepFirst ? [first] : []), `  ... [${cut} lines cut] ...`, ...kept].join('\n');
}

function joinStreams(stdout: string, stderr: string): string {
  if (stderr.trim() === '') return stdout;
  if (stdout === '') return stderr;
  return stdout.endsWith('\n') ? stdout + stderr : `${stdout}\n${stderr}`;
}

function formatSeconds(milliseconds: number): string {
  return `${Number((milliseconds / 1000).toPrecision(3))} s`;
}

function formatBytes(bytes: number): string {
  const mebibytes = bytes / 2 ** 20;
  return mebibytes >= 1 ? `${Number(mebibytes.toPrecision(4))} MiB` : `${bytes} bytes`;
}
