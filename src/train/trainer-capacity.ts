/**
 * Whether this machine can hold P trainer ranks of a model, decided before any starts. On CPU
 * (gloo) each rank is a busy process: more ranks than cores only queue for them, and P ranks
 * need about P × (base + model) + 3 × model bytes (the gradients and AdamW's two moments,
 * sharded over the ranks). The P × model term was each rank's whole fp32 copy while it loaded;
 * ranks now load only their shards (python/agentmath_train/sharded_load.py), so for P > 1 it
 * is a margin for what a step gathers (the embeddings and a layer or two, unsharded) and
 * overestimates by up to (P − 1) × model; it stays until a step's peak is measured at several
 * P. The estimate is deliberately plain; GPU hosts and hosts where it is wrong skip it
 * (`--no-capacity-check`).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { join } from 'node:path';

/** A rank's resident memory before the model: Python, torch, transformers (about 280 MB measured on CPU). */
export const RANK_BASE_BYTES = 300 * 1024 * 1024;

export type MachineCapacity = { cores: number; memoryBytes: number };

/** This machine's cores and memory (a cgroup's memory limit when lower). */
export function machineCapacity(): MachineCapacity {
  const limit = process.constrainedMemory?.() ?? 0;
  const total = totalmem();
  return { cores: availableParallelism(), memoryBytes: limit > 0 && limit < total ? limit : total };
}

const DTYPE_BYTES: Record<string, number> = { float32: 4, float16: 2, bfloat16: 2, float64: 8 };

/** The model's weights in fp32 (what each rank loads), from the weight files' sizes and config's dtype. */
export function modelFp32Bytes(folder: string): number {
  if (!existsSync(folder) || !statSync(folder).isDirectory()) return 0;
  let dtype = 'float32';
  try {
    const config = JSON.parse(readFileSync(join(folder, 'config.json'), 'utf8')) as Record<string, unknown>;
    const named = config.torch_dtype ?? config.dtype;
    if (typeof named === 'string') dtype = named;
  } catch {
    // no readable config: the start reports it; assume fp32 here
  }
  const stored = readdirSync(folder)
    .filter((name) => name.endsWith('.safetensors') || name.endsWith('.bin'))
    .reduce((sum, name) => sum + statSync(join(folder, name)).size, 0);
  return Math.round((stored * 4) / (DTYPE_BYTES[dtype] ?? 4));
}

/** The estimated memory of `processes` ranks training a model of `modelBytes` fp32 bytes. */
export function trainerMemoryBytes(processes: number, modelBytes: number): number {
  return processes * (RANK_BASE_BYTES + modelBytes) + 3 * modelBytes;
}

const GIB = 1024 ** 3;
const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`;

/**
 * Why `processes` ranks do not fit `capacity` (a message naming `flag`), or null when they do.
 * `override` is the flag that skips the check, named in the message.
 */
export function trainerCapacityProblem({
  processes,
  modelBytes,
  capacity,
  flag,
  override,
}: {
  processes: number;
  modelBytes: number;
  capacity: MachineCapacity;
  flag: string;
  override: string;
}): string | null {
  const memory = trainerMemoryBytes(processes, modelBytes);
  const short: string[] = [];
  if (processes > capacity.cores) short.push(`one core each (this machine has ${capacity.cores})`);
  if (memory > capacity.memoryBytes) {
    short.push(
      `about ${gib(memory)} of memory (each rank ~${Math.round(RANK_BASE_BYTES / 2 ** 20)} MiB plus the model's ` +
        `${Math.ceil(modelBytes / 2 ** 20)} MiB in fp32; this machine has ${gib(capacity.memoryBytes)})`,
    );
  }
  if (short.length === 0) return null;
  return (
    `${flag} ${processes}: ${processes} trainer processes need ${short.join(' and ')}; lower ${flag}, ` +
    `or pass ${override} where the ranks run on GPUs or on a host this estimate misjudges`
  );
}
