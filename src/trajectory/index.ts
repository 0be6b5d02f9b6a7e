/** The trajectory module: the Trajectory record, its builders, JSONL files, and terminal rendering. */
export { type InspectOptions, inspectTrajectoryFile } from './inspect-file.ts';
export { responseTokens } from './loss-mask.ts';
export {
  createTrajectoryRenderer,
  heldBack,
  renderTrajectory,
  shouldUseColor,
  type TrajectoryRenderer,
  type TrajectoryRendererOptions,
} from './render-trajectory.ts';
export {
  executionOutcomeSchema,
  type ModelSegment,
  modelSegmentSchema,
  type Segment,
  segmentSchema,
  type ToolCall,
  type ToolSegment,
  type Trajectory,
  type TrajectoryFinishReason,
  toolCallSchema,
  toolSegmentSchema,
  trajectoryFinishReasonSchema,
  trajectorySchema,
} from './trajectory.ts';
export { InvalidTrajectoryError, type RecordLocation } from './trajectory-file-error.ts';
export {
  openTrajectoryWriter,
  parseTrajectory,
  parseTrajectoryLine,
  type ReadTrajectoriesOptions,
  readTrajectories,
  readTrajectoryLines,
  type TrajectoryLine,
  type TrajectoryWriter,
  type TrajectoryWriterOptions,
} from './trajectory-jsonl.ts';
