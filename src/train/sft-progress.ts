/**
 * Text for the progress of an SFT run: a one-line bar (step, loss, tokens/s, ETA) that a
 * terminal redraws in place, and plain lines for logs. Pure formatting; the command decides
 * where and how often to write.
 */
import type { SftEvent } from './sft-run.ts';

const WIDTH = 24;

/** `3m05s`, `42s`. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes}m${String(seconds % 60).padStart(2, '0')}s` : `${seconds}s`;
}

/** The bar of a training step: `[#####.....] 120/300 loss 0.4123 lr 2.1e-3 5321 tok/s ETA 1m10s`. */
export function formatStepBar(event: Extract<SftEvent, { type: 'train-step' }>): string {
  const filled = Math.round((WIDTH * event.step) / event.totalSteps);
  const bar = `${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}`;
  return (
    `[${bar}] ${event.step}/${event.totalSteps} loss ${event.loss?.toFixed(4) ?? 'not finite'} ` +
    `lr ${event.learningRate.toExponential(1)} ${Math.round(event.tokensPerSecond)} tok/s ` +
    `elapsed ${formatDuration(event.trainWallMs)} ETA ${formatDuration(event.etaMs)}`
  );
}

/** A log line for events other than steps, or null for events that print nothing. */
export function formatSftEvent(event: SftEvent): string | null {
  switch (event.type) {
    case 'sft-start':
      return `${event.resumed ? 'resuming SFT' : 'SFT'} of ${event.config.model} in ${event.dir}: ${JSON.stringify(event.config)}`;
    case 'model-initialised':
      return `model: a new byte model (${event.parameters.toLocaleString('en-US')} parameters) → ${event.path}`;
    case 'data-progress':
      return `data ${event.done}/${event.total}`;
    case 'data-ready':
      return `data: ${event.examples} examples (mean ${Math.round(event.meanTokens)} tokens), ${event.droppedTooLong} longer than the context left out`;
    case 'trainer-ready':
      return `trainer: ${event.parameters.toLocaleString('en-US')} parameters, ${event.worldSize} process(es) on ${event.device} (${event.url})`;
    case 'resumed':
      return `resumed from step ${event.step} (${event.checkpoint})`;
    case 'schedule':
      return event.reason === 'minutes'
        ? `schedule: ${event.totalSteps} steps fit --minutes`
        : `schedule: ${event.totalSteps} steps`;
    case 'checkpoint-saved':
      return `checkpoint step ${event.step} → ${event.path}`;
    case 'model-exported':
      return `model (Hugging Face layout): ${event.path}`;
    case 'eval-progress':
      return `eval ${event.done}/${event.total}: ${event.correct} correct`;
    case 'sft-finish':
    case 'train-step':
      return null;
  }
}
