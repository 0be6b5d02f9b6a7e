/**
 * The events the agent loop emits while a trajectory runs, for progress displays and logs.
 * Names are noun-then-verb. Events carry the records the loop just appended, never copies
 * to be kept in sync.
 */
import type { ModelSegment, ToolCall, ToolSegment, Trajectory } from '../trajectory/trajectory.ts';

export type AgentEvent =
  /** The record as it starts (new, or resumed with its earlier segments). */
  | { type: 'trajectory-start'; trajectory: Trajectory; resumed: boolean }
  | {
      type: 'turn-start';
      trajectoryId: string;
      /** 0-based engine call index within this trajectory. */
      turn: number;
      contextTokens: number;
      maxNewTokens: number;
    }
  | { type: 'turn-end'; trajectoryId: string; turn: number; segment: ModelSegment; engineMs: number }
  | {
      type: 'engine-retry';
      trajectoryId: string;
      attempt: number;
      delayMs: number;
      error: { code: string; message: string };
    }
  | { type: 'tool-call'; trajectoryId: string; toolCallIndex: number; code: string }
  | {
      type: 'tool-result';
      trajectoryId: string;
      toolCallIndex: number;
      toolCall: ToolCall;
      segment: ToolSegment;
    }
  /** A new session was given the earlier calls' code to rebuild the Python state. */
  | { type: 'session-restore'; trajectoryId: string; replayedCalls: number; ms: number }
  | { type: 'trajectory-finish'; trajectory: Trajectory };

export type AgentEventType = AgentEvent['type'];
