/**
 * `--cpu-offload`, taken by every command that starts trainer ranks (`trainer serve`,
 * `train rl --model`, `train sft --model`) and handed to `agentmath_train serve`.
 */

/** The flag's help: what it does on GPU ranks, and that CPU ranks accept it and change nothing. */
export const CPU_OFFLOAD_HELP =
  'keep the sharded parameters, gradients and optimizer state in host memory, moved to the GPU a layer at a time ' +
  "(FSDP2's CPUOffloadPolicy; the optimizer steps on the CPU); on CPU ranks it changes nothing";
