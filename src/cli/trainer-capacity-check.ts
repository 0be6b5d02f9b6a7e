/**
 * The check every command that starts trainer ranks runs before it starts anything
 * (`train sft --model`, `train rl --model`, `trainer serve`, `bench trainer`): the rank count
 * must fit this machine's cores and memory (src/train/trainer-capacity.ts), else exit 2 naming
 * the option; `--no-capacity-check` skips it (GPU hosts, many-core hosts).
 */
import { machineCapacity, modelFp32Bytes, trainerCapacityProblem } from '../train/index.ts';
import { usageError } from './cli-options.ts';

/** The flag (commander's negated option: `capacityCheck`, default true) and its help. */
export const CAPACITY_OVERRIDE = '--no-capacity-check';
export const CAPACITY_OVERRIDE_HELP =
  "start the trainer processes even where this machine's cores or memory look too few for them (GPU hosts)";

/** Throws a usage error (exit 2) when `processes` ranks of `model` do not fit this machine. */
export function assertTrainerCapacity({
  processes,
  model,
  flag,
  check,
}: {
  processes: number;
  model: string;
  flag: string;
  /** false with --no-capacity-check. */
  check: boolean | undefined;
}): void {
  if (check === false) return;
  const problem = trainerCapacityProblem({
    processes,
    modelBytes: modelFp32Bytes(model),
    capacity: machineCapacity(),
    flag,
    override: CAPACITY_OVERRIDE,
  });
  if (problem !== null) throw usageError(problem);
}
