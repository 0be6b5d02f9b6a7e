/**
 * The agent loop: one trajectory from a problem to a finish reason (answer, budgets, abort,
 * error), its options, events, prompt builders and the park that keeps sessions between
 * segments.
 */

export {
  AgentConfigError,
  EngineFailedError,
  EngineTokensMissingError,
  SandboxSessionError,
  TrajectoryNotResumableError,
} from './agent-errors.ts';
export type { AgentEvent, AgentEventType } from './agent-event.ts';
export {
  type AgentConfig,
  type AgentOptions,
  agentConfigSchema,
  type Budgets,
  budgetsSchema,
  type Problem,
  resolveAgentConfig,
  type SamplingOptions,
  samplingSchema,
  toolOptionsSchema,
} from './agent-options.ts';
export {
  instructedPrompt,
  type PromptBuilder,
  type PromptBuilderName,
  problemOnlyPrompt,
  promptBuilders,
  renderPrompt,
  systemIntoUser,
  textOnlyPrompt,
} from './prompt-builder.ts';
export { resumeAgent, runAgent } from './run-agent.ts';
export { SessionPark, type SessionParkOptions } from './session-park.ts';
