/**
 * How long a call that handles a whole model may take before it counts as an outage (never as a
 * refusal): a base for what does not grow with the model, plus the model's bytes at a floor
 * rate of 20 MiB/s (slower than any disk, network or process group a cluster runs on, so a
 * healthy call never reaches it):
 *
 *   timeout = base + bytes / 20 MiB/s
 *
 * Bases: 10 minutes for an engine's weight load (`/update_weights_from_disk`, one bucket of
 * `/update_weights_from_distributed`, with the bucket's bytes), 1 hour for a trainer call (a
 * step's compute, `/export`, `/broadcast_weights`). A bf16 Qwen3-30B-A3B (61 GB) gets 58 minutes
 * for a load and 1 h 48 min for a trainer call; a 0.6B model 11 and 61 minutes.
 */

export const LOAD_BASE_MS = 600_000;
export const TRAINER_BASE_MS = 3_600_000;
export const FLOOR_BYTES_PER_SECOND = 20 * 1024 * 1024;

/** `base + bytes / 20 MiB/s`, in milliseconds. */
export function modelCallTimeoutMs(bytes: number, baseMs: number): number {
  return baseMs + Math.ceil((Math.max(0, bytes) / FLOOR_BYTES_PER_SECOND) * 1000);
}

const DTYPE_BYTES: Record<string, number> = {
  float64: 8,
  float32: 4,
  bfloat16: 2,
  float16: 2,
  float8_e4m3fn: 1,
  float8_e5m2: 1,
};

/** A model's bytes in a torch dtype (`bfloat16`, `torch.float32`); 4 per parameter when unknown. */
export function modelBytes(parameters: number, dtype: string): number {
  return parameters * (DTYPE_BYTES[dtype.replace(/^torch\./, '')] ?? 4);
}
