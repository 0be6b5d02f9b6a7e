/**
 * The train module: the trainer client for the PyTorch worker's training routes (the training
 * loop driver builds on it).
 */
export {
  type GrpoSequence,
  type GrpoStepRequest,
  type GrpoStepResult,
  type SftSequence,
  type SftStepRequest,
  type SftStepResult,
  TrainerClient,
  TrainerRequestError,
  type TrainerState,
} from './trainer-client.ts';
