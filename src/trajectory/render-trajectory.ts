/**
 * Terminal rendering of trajectories: reasoning, code, interpreter output and answer each
 * in its own style (colours on a terminal, a labelled gutter always, so the kinds stay
 * distinct without colour), with per-segment token counts and loss mask, tool-call statuses
 * and timings, and the finish reason. The renderer is incremental: it takes model text as it
 * streams, whole segments, or a whole trajectory, and returns only the new output each time.
 */
import type { Dialect } from '../protocol/dialect.ts';
import { getDialect } from '../protocol/dialects.ts';
import {
  type FormatIssue,
  parseResponse,
  type ReasoningState,
  type ResponsePartKind,
} from '../protocol/response-parser.ts';
import { truncateMiddle } from '../protocol/tool-result.ts';
import type { Segment, ToolCall, Trajectory } from './trajectory.ts';

const ANSI = {
  bold: ['\u001b[1m', '\u001b[22m'],
  dim: ['\u001b[2m', '\u001b[22m'],
  red: ['\u001b[31m', '\u001b[39m'],
  green: ['\u001b[32m', '\u001b[39m'],
  yellow: ['\u001b[33m', '\u001b[39m'],
  cyan: ['\u001b[36m', '\u001b[39m'],
  magenta: ['\u001b[35m', '\u001b[39m'],
} as const;
type Style = keyof typeof ANSI;

const PART_STYLE: Record<ResponsePartKind, { label: string; text: Style[]; gutter: Style[] }> = {
  reasoning: { label: 'think', text: [], gutter: ['dim'] },
  code: { label: 'code', text: ['cyan'], gutter: ['cyan'] },
  'tool-output': { label: 'output', text: ['yellow'], gutter: ['yellow'] },
  answer: { label: 'answer', text: ['bold', 'green'], gutter: ['green'] },
};
const GUTTER_WIDTH = 6;
const PROMPT_PREVIEW_CHARS = 600;

/**
 * Whether to colour output for `stream`: never with a non-empty NO_COLOR, always with a
 * FORCE_COLOR other than empty, 0 or false, otherwise only on a terminal that is not `dumb`.
 */
export function shouldUseColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && !['', '0', 'false'].includes(env.FORCE_COLOR)) return true;
  return stream.isTTY === true && env.TERM !== 'dumb';
}

export type TrajectoryRendererOptions = { dialect: Dialect; color: boolean };

/** Renders one trajectory piece by piece; every method returns the text to print next. */
export type TrajectoryRenderer = {
  /** The title line and prompt preview. */
  header(trajectory: Trajectory): string;
  /** Model text as it streams in; markup cut off at the end is held back until it completes. */
  text(chunk: string): string;
  /** A finished segment: its remaining text, then a summary line (tokens, mask, tool call). */
  segment(segment: Segment, toolCall?: ToolCall): string;
  /** The finish line: reason, answer, tool-call tally, token totals, timings, format issues. */
  footer(trajectory: Trajectory): string;
};

/** A renderer for one trajectory in `dialect`. */
export function createTrajectoryRenderer(options: TrajectoryRendererOptions): TrajectoryRenderer {
  const { dialect, color } = options;
  const paint = (text: string, styles: readonly Style[]) =>
    color && text !== ''
      ? styles.reduce((out, style) => `${ANSI[style][0]}${out}${ANSI[style][1]}`, text)
      : text;
  let response = '';
  let emitted = 0;
  let resume: { offset: number; reasoning: ReasoningState } = { offset: 0, reasoning: 'none' };
  let lastKind: ResponsePartKind | null = null;
  let atLineStart = true;
  let segmentCount = 0;
  let streamed = '';

  /** Output for response[emitted, end), styled by the parts it falls in. */
  const renderUpTo = (end: number): string => {
    if (end <= emitted) return '';
    const parsed = parseResponse(response, dialect.markup, {
      from: resume.offset,
      reasoning: resume.reasoning,
    });
    let out = '';
    for (const part of parsed.parts) {
      const start = Math.max(part.start, emitted);
      const stop = Math.min(part.end, end);
      if (start < stop) out += emitPiece(part.kind, response.slice(start, stop));
    }
    emitted = end;
    if (parsed.resume.offset <= emitted) resume = parsed.resume;
    return out;
  };

  const emitPiece = (kind: ResponsePartKind, piece: string): string => {
    let text = piece;
    let out = '';
    if (kind !== lastKind) {
      if (!atLineStart) out += '\n';
      atLineStart = true;
      text = text.replace(/^(?:[ \t]*\n)+/, '');
      lastKind = kind;
    }
    const style = PART_STYLE[kind];
    // Prose outside any wrapper is not "think" in a dialect without one (markdown).
    const label = kind === 'reasoning' && dialect.markup.reasoning === null ? 'text' : style.label;
    const lines = text.split('\n');
    lines.forEach((line, index) => {
      const last = index === lines.length - 1;
      if (last && line === '') return;
      if (atLineStart) out += paint(`${label.padStart(GUTTER_WIDTH)} │ `, style.gutter);
      out += paint(line, style.text);
      atLineStart = !last;
      if (!last) out += '\n';
    });
    return out;
  };

  const endLine = (): string => {
    const out = atLineStart ? '' : '\n';
    atLineStart = true;
    lastKind = null;
    return out;
  };

  return {
    header(trajectory) {
      const promptTokens =
        trajectory.prompt.tokenIds === null ? 'text-only' : `${trajectory.prompt.tokenIds.length} tokens`;
      const title = [
        `trajectory ${trajectory.id}`,
        `problem ${trajectory.problemId ?? '-'}`,
        `sample ${trajectory.sample}`,
        `dialect ${trajectory.dialect}`,
        `prompt ${promptTokens}`,
        `started ${trajectory.timing.startedAt}`,
      ].join(' · ');
      const preview = truncateMiddle(trajectory.prompt.text.trimEnd(), PROMPT_PREVIEW_CHARS)
        .split('\n')
        .map((line) => `${paint(`${'prompt'.padStart(GUTTER_WIDTH)} │ `, ['dim'])}${paint(line, ['dim'])}`)
        .join('\n');
      return `${paint(`══ ${title}`, ['bold'])}\n${preview}\n`;
    },
    text(chunk) {
      response += chunk;
      streamed += chunk;
      return renderUpTo(response.length - heldBack(response, dialect));
    },
    segment(segment, toolCall) {
      // Text streamed through `text()` is the start of this segment; add only the rest.
      response += segment.text.startsWith(streamed) ? segment.text.slice(streamed.length) : segment.text;
      streamed = '';
      segmentCount++;
      return (
        renderUpTo(response.length) +
        endLine() +
        segmentSummary(segment, segmentCount, toolCall, paint) +
        '\n'
      );
    },
    footer(trajectory) {
      return footerLine(trajectory, parseResponse(response, dialect.markup).issues, paint);
    },
  };
}

/** Renders a whole trajectory: header, every segment with its summary, and the footer. */
export function renderTrajectory(trajectory: Trajectory, options: { color: boolean }): string {
  const renderer = createTrajectoryRenderer({
    dialect: getDialect(trajectory.dialect),
    color: options.color,
  });
  let out = renderer.header(trajectory);
  for (const segment of trajectory.segments) {
    out += renderer.segment(
      segment,
      segment.kind === 'tool' ? trajectory.toolCalls[segment.toolCallIndex] : undefined,
    );
  }
  return out + renderer.footer(trajectory);
}

type Paint = (text: string, styles: readonly Style[]) => string;

/**
 * How much of the end of `text` might be the start of a delimiter, to hold back while
 * streaming: a proper prefix of any delimiter, and for line-anchored markup an unfinished
 * line that starts with a backtick.
 */
export function heldBack(text: string, dialect: Dialect): number {
  const { markup } = dialect;
  const blocks = [markup.reasoning, markup.code, markup.toolOutput, markup.verbatim];
  const delimiters = blocks.flatMap((block) => (block ? [block.openText, block.closeText] : []));
  let held = 0;
  // Line-anchored delimiters are decided by the line rule below.
  for (const delimiter of markup.lineAnchored ? [] : delimiters) {
    for (let length = Math.min(delimiter.length - 1, text.length); length > held; length--) {
      if (text.endsWith(delimiter.slice(0, length))) {
        held = length;
        break;
      }
    }
  }
  if (markup.lineAnchored) {
    const lineStart = text.lastIndexOf('\n') + 1;
    if (/^[ \t]{0,3}`/.test(text.slice(lineStart))) held = Math.max(held, text.length - lineStart);
  }
  return held;
}

function segmentSummary(
  segment: Segment,
  number: number,
  toolCall: ToolCall | undefined,
  paint: Paint,
): string {
  const tokens =
    segment.tokenIds === null
      ? `${segment.text.length} chars (text-only)`
      : `${segment.tokenIds.length} tokens`;
  const fields = [`#${number} ${segment.kind}`, tokens, `mask ${segment.kind === 'model' ? 1 : 0}`];
  if (segment.kind === 'model') {
    fields.push(
      `finish ${segment.finishReason}${segment.matchedStop === null ? '' : ` ${JSON.stringify(segment.matchedStop)}`}`,
    );
    if (segment.policyVersion !== null) fields.push(`policy v${segment.policyVersion}`);
    if (segment.logprobs && segment.logprobs.length > 0) {
      const mean = segment.logprobs.reduce((sum, value) => sum + value, 0) / segment.logprobs.length;
      fields.push(`mean logprob ${mean.toFixed(3)}`);
    }
    return paint(`   ── ${fields.join(' · ')}`, ['dim']);
  }
  fields.push(`tool call ${segment.toolCallIndex}`);
  if (toolCall === undefined) return paint(`   ── ${fields.join(' · ')}`, ['dim']);
  const outcome = toolCall.outcome;
  const status = paint(outcome.status, [
    outcome.status === 'ok' ? 'green' : outcome.status === 'error' ? 'red' : 'magenta',
  ]);
  const inside = 'ms' in outcome ? ` (run ${formatMs(outcome.ms)})` : '';
  const detail =
    outcome.status === 'timeout'
      ? ` after ${formatMs(outcome.limitMs)} limit`
      : outcome.status === 'memory-exceeded'
        ? ` over ${outcome.limitBytes} bytes`
        : outcome.status === 'killed'
          ? `: ${outcome.reason}`
          : '';
  return `${paint(`   ── ${fields.join(' · ')} · `, ['dim'])}${status}${paint(`${detail} · ${formatMs(toolCall.ms)}${inside}`, ['dim'])}`;
}

function footerLine(trajectory: Trajectory, issues: readonly FormatIssue[], paint: Paint): string {
  const finish = trajectory.finish;
  const reason =
    finish === null
      ? paint('running (not finished)', ['yellow'])
      : paint(finish.reason, [
          finish.reason === 'answer' ? 'green' : finish.reason === 'error' ? 'red' : 'yellow',
        ]);
  const statuses = new Map<string, number>();
  for (const call of trajectory.toolCalls)
    statuses.set(call.outcome.status, (statuses.get(call.outcome.status) ?? 0) + 1);
  const tally = [...statuses].map(([status, count]) => `${count} ${status}`).join(', ');
  const calls = `${trajectory.toolCalls.length} tool ${trajectory.toolCalls.length === 1 ? 'call' : 'calls'}${tally ? ` (${tally})` : ''}`;
  const lines = [
    `${paint('══ finish:', ['bold'])} ${reason} · answer: ${trajectory.answer === null ? '(none)' : paint(trajectory.answer, ['bold', 'green'])}`,
    `   ${calls} · ${trajectory.segments.length} segments · ${tokenTotals(trajectory)}`,
    `   engine ${formatMs(trajectory.timing.engineMs)} · tools ${formatMs(trajectory.timing.toolMs)} · finished ${trajectory.timing.finishedAt ?? '-'}`,
  ];
  if (finish?.error)
    lines.push(`   ${paint(`error [${finish.error.code}] ${finish.error.message}`, ['red'])}`);
  for (const issue of issues) {
    lines.push(
      `   ${paint(`format: ${issue.kind} ${JSON.stringify(issue.markup)} at character ${issue.at}`, ['yellow'])}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

function tokenTotals(trajectory: Trajectory): string {
  if (trajectory.prompt.tokenIds === null) {
    const chars = trajectory.segments.reduce((sum, segment) => sum + segment.text.length, 0);
    return `${chars} response chars (text-only)`;
  }
  let model = 0;
  let tool = 0;
  for (const segment of trajectory.segments) {
    const count = segment.tokenIds?.length ?? 0;
    if (segment.kind === 'model') model += count;
    else tool += count;
  }
  return `${model + tool} response tokens (mask 1: ${model}, mask 0: ${tool})`;
}

function formatMs(milliseconds: number): string {
  return milliseconds >= 1000 ? `${(milliseconds / 1000).toFixed(2)} s` : `${Math.round(milliseconds)} ms`;
}
