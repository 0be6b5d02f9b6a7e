/**
 * The agent loop: generate until a code block closes, run it in the trajectory's sandbox
 * session, append the rendered result, and go on until an answer, a budget, an abort or an
 * error ends the trajectory. `runAgent` starts a trajectory; `resumeAgent` continues one that
 * stopped at its segment budget, exactly where it stopped.
 *
 * Token ids returned by the engine are kept as returned; only tool results are tokenized,
 * each on its own, and appended with loss mask 0. Engine and sandbox failures end the
 * trajectory with a finish reason; only caller mistakes throw.
 */
import { randomUUID } from 'node:crypto';
import type { ChatMessage, Tokenizer } from '../engine/tokenizer.ts';
import type { GenerateResult } from '../engine/types.ts';
import type { ClosedCode, Dialect } from '../protocol/dialect.ts';
import { finalAnswer } from '../protocol/response-parser.ts';
import { type Clock, systemClock } from '../shared/clock.ts';
import type {
  ModelSegment,
  ToolCall,
  ToolSegment,
  Trajectory,
  TrajectoryFinishReason,
} from '../trajectory/trajectory.ts';
import {
  AgentConfigError,
  EngineTokensMissingError,
  SandboxSessionError,
  TrajectoryNotResumableError,
} from './agent-errors.ts';
import type { AgentEvent } from './agent-event.ts';
import { type AgentConfig, type AgentOptions, type Problem, resolveAgentConfig } from './agent-options.ts';
import { cooperativeYieldFor } from './cooperative-yield.ts';
import { callEngine, describeError } from './engine-call.ts';
import { appendSegment, type LoopState, loopStateFrom, modelText } from './loop-state.ts';
import { instructedPrompt, renderPrompt } from './prompt-builder.ts';
import { joinSplitStop } from './split-stop.ts';
import {
  endedWithEos,
  firstStop,
  newTokenAllowance,
  stopsBeforeTurn,
  toolCallsSpent,
} from './stop-condition.ts';
import { TrajectorySession } from './trajectory-session.ts';
import { resolveUnreportedStop } from './unreported-stop.ts';

/** Runs one trajectory for a problem and returns its finished (or parked) record. */
export async function runAgent(problem: Problem, options: AgentOptions): Promise<Trajectory> {
  const wait = cooperativeYieldFor(options.clock ?? systemClock).yieldIfBusy();
  if (wait !== null) await wait;
  const config = resolveAgentConfig(options);
  const { tokenizer, dialect } = options;
  const now = options.now ?? (() => new Date());
  const messages = (options.prompt ?? instructedPrompt)(problem, dialect);
  const promptText = renderPrompt(messages, tokenizer);
  const trajectory: Trajectory = {
    id: (options.createId ?? randomUUID)(),
    problemId: problem.id,
    sample: options.sample ?? 0,
    dialect: dialect.name,
    prompt: { text: promptText, tokenIds: tokenizer === null ? null : tokenizer.encode(promptText) },
    segments: [],
    toolCalls: [],
    answer: null,
    finish: null,
    timing: { startedAt: now().toISOString(), finishedAt: null, engineMs: 0, toolMs: 0 },
    // Chat APIs need the messages again on every call; a token-level record does not.
    ...(options.meta === undefined && tokenizer !== null
      ? {}
      : { meta: { ...options.meta, ...(tokenizer === null ? { promptMessages: messages } : {}) } }),
  };
  return drive(trajectory, options, config, false);
}

/**
 * Continues a trajectory that stopped with `segment-budget` or `paused`. The input record is not changed;
 * the returned one carries the new segments. Its session comes from `options.park` when it
 * was parked there, else a new session is rebuilt by replay (see `TrajectorySession`).
 */
export async function resumeAgent(trajectory: Trajectory, options: AgentOptions): Promise<Trajectory> {
  const reason = trajectory.finish?.reason;
  if (reason !== 'segment-budget' && reason !== 'paused') {
    throw new TrajectoryNotResumableError(
      trajectory.id,
      trajectory.finish === null
        ? 'it has no finish record'
        : `it finished with "${trajectory.finish.reason}"`,
    );
  }
  if (trajectory.dialect !== options.dialect.name) {
    throw new AgentConfigError(
      `trajectory ${trajectory.id} uses dialect "${trajectory.dialect}" but option "dialect" is "${options.dialect.name}"`,
    );
  }
  if (trajectory.prompt.tokenIds !== null && options.tokenizer === null) {
    throw new AgentConfigError(
      `trajectory ${trajectory.id} is token-level: option "tokenizer" is needed to tokenize tool results`,
    );
  }
  const config = resolveAgentConfig(options);
  const resumed: Trajectory = {
    ...trajectory,
    segments: [...trajectory.segments],
    toolCalls: [...trajectory.toolCalls],
    finish: null,
    timing: { ...trajectory.timing, finishedAt: null },
  };
  return drive(resumed, options, config, true);
}

/**
 * Engine-made aborts in a row without a token before the trajectory finishes `aborted`: an abort
 * that brings tokens is progress (bounded by the token budget); empty ones repeat only if the
 * engine keeps refusing the request.
 */
const MAX_EMPTY_PREEMPTIONS = 3;

/** What the end of a turn asks for next. */
type NextStep =
  | { type: 'generate' }
  | { type: 'execute'; closed: ClosedCode }
  | { type: 'finish'; reason: TrajectoryFinishReason };

async function drive(
  trajectory: Trajectory,
  options: AgentOptions,
  config: AgentConfig,
  resumed: boolean,
): Promise<Trajectory> {
  const { engine, tokenizer, dialect, signal, pause } = options;
  const step = options.step ?? null;
  const emit = options.onEvent ?? (() => {});
  const now = options.now ?? (() => new Date());
  const clock = options.clock ?? systemClock;
  const cooperative = cooperativeYieldFor(clock);
  const state = loopStateFrom(trajectory, tokenizer);
  const parked = resumed ? (options.park?.take(trajectory.id) ?? null) : null;
  const tools = new TrajectorySession({
    provider: options.sandbox,
    session: parked,
    priorCalls: trajectory.toolCalls,
    timeoutMs: config.tool.timeoutMs,
    clock,
    ...(options.park === undefined ? {} : { park: options.park }),
    onRestore: (replayedCalls, ms) =>
      emit({ type: 'session-restore', trajectoryId: trajectory.id, replayedCalls, ms }),
  });
  let finish: NonNullable<Trajectory['finish']> | null = null;
  /** Engine-made aborts in a row that brought no token (see `MAX_EMPTY_PREEMPTIONS`). */
  let emptyPreemptions = 0;
  emit({ type: 'trajectory-start', trajectory, resumed });

  try {
    while (finish === null) {
      const stop = firstStop(stopsBeforeTurn, { state, budgets: config.budgets, signal, pause });
      if (stop !== null) {
        finish = { reason: stop };
        break;
      }

      const maxNewTokens = newTokenAllowance(state, config.budgets);
      const turn = state.turns;
      emit({
        type: 'turn-start',
        trajectoryId: trajectory.id,
        turn,
        contextTokens: state.contextTokens,
        maxNewTokens,
      });
      const call = await callEngine(
        engine,
        {
          // The loop's own array, not a copy: engines read it during the call and keep no reference.
          promptTokenIds: state.tokenLevel ? state.contextTokenIds : [],
          promptText: state.contextText,
          ...(state.tokenLevel ? {} : { messages: conversation(state) }),
          maxNewTokens,
          temperature: config.sampling.temperature,
          topP: config.sampling.topP,
          stop: [...dialect.stopStrings],
          ...(config.sampling.seed === undefined
            ? {}
            : { seed: callSeed(config.sampling.seed, trajectory.toolCalls.length) }),
          sessionId: trajectory.id,
        },
        {
          retry: config.retry,
          timeoutMs: config.engineTimeoutMs,
          signal,
          ...(pause === undefined ? {} : { pause }),
          clock,
          onRetry: (attempt, delayMs, error) =>
            emit({
              type: 'engine-retry',
              trajectoryId: trajectory.id,
              attempt,
              delayMs,
              error: describeError(error),
            }),
        },
      );
      trajectory.timing.engineMs += call.ms;
      if (call.status === 'aborted') {
        finish = { reason: 'aborted' };
        break;
      }
      if (call.status === 'paused') {
        finish = { reason: 'paused' };
        break;
      }
      if (call.status === 'failed') {
        finish = { reason: 'error', error: describeError(call.error) };
        break;
      }

      const wait = cooperative.yieldIfBusy();
      if (wait !== null) await wait;
      const result = resolveUnreportedStop(
        state.turnText,
        afterLengthCut(state, call.result, dialect, tokenizer),
        dialect,
      );
      const pausedHere = result.finishReason === 'abort' && pause?.aborted === true && !signal?.aborted;
      const empty = (result.tokenIds === null || result.tokenIds.length === 0) && result.text === '';
      if (pausedHere && empty) {
        finish = { reason: 'paused' };
        break;
      }
      // The engine aborted the request itself (SGLang's and vLLM's `abort` pause around a weight
      // update): keep its tokens and resubmit prompt + tokens so far, which the engine serves
      // after it continues, with the new weights (a new segment, with their version).
      const preempted = result.finishReason === 'abort' && !pausedHere;
      if (preempted && empty) {
        emptyPreemptions += 1;
        if (emptyPreemptions > MAX_EMPTY_PREEMPTIONS) {
          finish = { reason: 'aborted' };
          break;
        }
        continue;
      }
      if (preempted) emptyPreemptions = 0;
      const made = modelSegment(state, result, tokenizer, engine.name, step);
      if (made.status === 'error') {
        finish = { reason: 'error', error: describeError(made.error) };
        break;
      }
      appendSegment(state, made.segment);
      emit({ type: 'turn-end', trajectoryId: trajectory.id, turn, segment: made.segment, engineMs: call.ms });

      if (pausedHere) {
        // The partial tokens are kept; the resumed loop continues the turn from them.
        finish = { reason: 'paused' };
        break;
      }
      const next: NextStep = preempted ? { type: 'generate' } : nextStep(state, result, dialect);
      if (next.type === 'finish') finish = { reason: next.reason };
      else if (next.type === 'execute') {
        finish =
          toolCallsSpent({ state, budgets: config.budgets, signal }) === null
            ? null
            : { reason: 'max-tool-calls' };
        if (finish === null)
          await runTool(state, tools, next.closed, { dialect, tokenizer, config, signal, clock, emit });
      }
    }
  } catch (error) {
    // Aborted while the sandbox ran, or no session could be opened; anything else is a bug.
    if (signal?.aborted) finish = { reason: 'aborted' };
    else if (error instanceof SandboxSessionError) {
      finish = { reason: 'error', error: describeError(error) };
    } else {
      await tools.release(null);
      throw error;
    }
  }

  const parkHere =
    (finish.reason === 'segment-budget' || finish.reason === 'paused') && options.park !== undefined;
  const releaseStarted = clock.now();
  await tools.release(parkHere && options.park ? { park: options.park, trajectoryId: trajectory.id } : null);
  trajectory.timing.toolMs += clock.now() - releaseStarted;
  trajectory.answer = finalAnswer(modelText(trajectory), options.dialect.markup);
  trajectory.finish = finish;
  trajectory.timing.finishedAt = now().toISOString();
  emit({ type: 'trajectory-finish', trajectory });
  return trajectory;
}

/**
 * The seed of one engine call of a seeded trajectory: the trajectory's seed until its first
 * code call, then a mix of it with the number of code calls so far. Engines draw a seeded
 * request's tokens from (seed, output index), so each turn needs its own seed (one seed would
 * replay the first turn's draws after every interpreter output); a cut by a segment budget
 * does not change the count, so a resumed turn keeps its turn's seed.
 */
export function callSeed(seed: number, toolCalls: number): number {
  if (toolCalls === 0) return seed;
  let mixed = (seed ^ Math.imul(toolCalls, 0x9e3779b1)) >>> 0;
  mixed = Math.imul(mixed ^ (mixed >>> 16), 0x85ebca6b) >>> 0;
  return (mixed ^ (mixed >>> 13)) & 0x7fffffff;
}

/**
 * The model segment for an engine result. The segment's text always ends with the stop
 * string the model produced (engines that trim it from the text still return its tokens);
 * in a token-level trajectory whose tokens lack it, the text lacks it too and the dialect
 * restores it in the tool text.
 */
function modelSegment(
  state: LoopState,
  result: GenerateResult,
  tokenizer: Tokenizer | null,
  engineName: string,
  step: number | null,
): { status: 'ok'; segment: ModelSegment } | { status: 'error'; error: Error } {
  if (state.tokenLevel && result.tokenIds === null) {
    if (state.turns > 0) return { status: 'error', error: new EngineTokensMissingError(engineName) };
    // A text-only engine answered the first call: the whole trajectory becomes text-level.
    state.tokenLevel = false;
    state.trajectory.prompt = { ...state.trajectory.prompt, tokenIds: null };
    state.contextTokenIds = [];
    state.contextTokens = state.countText(state.trajectory.prompt.text);
  }
  const tokenIds = state.tokenLevel ? result.tokenIds : null;
  let text = result.text;
  const stop = result.finishReason === 'stop' ? result.matchedStop : null;
  if (stop !== null && stop !== '') {
    const textHasStop = result.stopIncluded ?? text.endsWith(stop);
    const base = textHasStop && text.endsWith(stop) ? text.slice(0, -stop.length) : text;
    const modelMadeStop = tokenIds === null || tokenizer === null || tokensContain(tokenizer, tokenIds, stop);
    text = modelMadeStop ? base + stop : base;
  }
  return {
    status: 'ok',
    segment: {
      kind: 'model',
      text,
      tokenIds,
      logprobs: tokenIds === null ? null : result.logprobs,
      policyVersion: result.policyVersion,
      finishReason: result.finishReason,
      matchedStop: result.matchedStop,
      step,
      replica: result.replica ?? null,
    },
  };
}

/**
 * The conversation for chat APIs: the prompt's messages, then everything appended so far as
 * one assistant message for the engine to continue.
 */
function conversation(state: LoopState): ChatMessage[] {
  const stored = state.trajectory.meta?.promptMessages;
  const messages: ChatMessage[] = Array.isArray(stored)
    ? (stored as ChatMessage[])
    : [{ role: 'user', content: state.trajectory.prompt.text }];
  const response = state.contextText.slice(state.trajectory.prompt.text.length);
  return response === '' ? messages : [...messages, { role: 'assistant', content: response }];
}

/** After a call cut by `length`, a stop string may straddle the two calls (see `joinSplitStop`). */
function afterLengthCut(
  state: LoopState,
  result: GenerateResult,
  dialect: Dialect,
  tokenizer: Tokenizer | null,
): GenerateResult {
  const last = state.trajectory.segments.at(-1);
  // A turn cut by the length limit or by a pause goes on in this call.
  if (last?.kind !== 'model' || (last.finishReason !== 'length' && last.finishReason !== 'abort')) {
    return result;
  }
  const stops = dialect.stopStrings;
  return joinSplitStop(state.turnText, result, stops, state.tokenLevel ? tokenizer : null) ?? result;
}

/** Whether the last tokens decode to text containing `stop` (a stop may span several tokens). */
function tokensContain(tokenizer: Tokenizer, tokenIds: readonly number[], stop: string): boolean {
  const tail = tokenIds.slice(Math.max(0, tokenIds.length - (stop.length + 4)));
  return tokenizer.decode(tail).includes(stop);
}

function nextStep(state: LoopState, result: GenerateResult, dialect: Dialect): NextStep {
  if (result.finishReason === 'abort') return { type: 'finish', reason: 'aborted' };
  if (result.finishReason === 'length') return { type: 'generate' };
  if (endedWithEos(result)) {
    return {
      type: 'finish',
      reason: finalAnswer(modelText(state.trajectory), dialect.markup) === null ? 'no-answer' : 'answer',
    };
  }
  const closed = dialect.closedCodeAtEnd(state.turnText, result.matchedStop);
  return closed === null ? { type: 'generate' } : { type: 'execute', closed };
}

async function runTool(
  state: LoopState,
  tools: TrajectorySession,
  step: ClosedCode,
  context: {
    dialect: Dialect;
    tokenizer: Tokenizer | null;
    config: AgentConfig;
    signal: AbortSignal | undefined;
    clock: Clock;
    emit: (event: AgentEvent) => void;
  },
): Promise<void> {
  const { dialect, tokenizer, config, signal, clock, emit } = context;
  const trajectory = state.trajectory;
  const toolCallIndex = trajectory.toolCalls.length;
  emit({ type: 'tool-call', trajectoryId: trajectory.id, toolCallIndex, code: step.code });
  const started = clock.now();
  const outcome = await tools.execute(step.code, signal);
  const ms = clock.now() - started;
  const toolCall: ToolCall = { code: step.code, outcome, ms };
  trajectory.toolCalls.push(toolCall);
  trajectory.timing.toolMs += ms;
  state.segmentToolCalls += 1;
  const text = dialect.renderToolResult(outcome, {
    stopTrimmed: step.stopTrimmed,
    outputOpening: step.outputOpening,
    ...(config.tool.maxOutputChars === undefined ? {} : { maxChars: config.tool.maxOutputChars }),
    ...(config.tool.tracebackLines === undefined ? {} : { tracebackLines: config.tool.tracebackLines }),
  });
  const segment: ToolSegment = {
    kind: 'tool',
    text,
    tokenIds:
      state.tokenLevel && tokenizer !== null ? tokenizer.encode(text, { specialTokens: false }) : null,
    toolCallIndex,
  };
  appendSegment(state, segment);
  emit({ type: 'tool-result', trajectoryId: trajectory.id, toolCallIndex, toolCall, segment });
}
