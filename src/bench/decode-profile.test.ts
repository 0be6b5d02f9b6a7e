import { describe, expect, it } from 'vitest';
import { renderDecodeProfile } from './decode-profile.ts';
import { describeMachine } from './engine-model-bench.ts';

describe('renderDecodeProfile', () => {
  it('prints each concurrency with its step time, phases and ops as percentages', () => {
    const text = renderDecodeProfile([
      {
        concurrency: 8,
        stepMs: 41.25,
        profiledStepMs: 52,
        phases: [
          { name: 'forward', share: 0.9 },
          { name: 'sampling', share: 0.05 },
        ],
        ops: [{ name: 'mkldnn::_linear_pointwise', share: 0.62, callsPerStep: 211, msPerStep: 32.2 }],
        outsideOpsShare: 0.12,
      },
    ]);
    expect(text).toContain(
      '8 concurrent: 41.3 ms a step (52.0 under the profiler); forward 90.0%, sampling 5.0%',
    );
    expect(text).toContain('outside any op 12.0%');
    expect(text).toContain('mkldnn::_linear_pointwise | 62.0% | 211 | 32.20');
  });
});

describe('describeMachine', () => {
  const machine = {
    cpuModel: 'Intel(R) Xeon(R) Platinum',
    cores: 2,
    kernelFlags: ['avx512f', 'avx512_bf16', 'amx_tile', 'amx_bf16'],
    torchCpuCapability: 'AVX512',
    onednnIsa: 'Intel AVX-512 with Intel AMX',
    onednnLinear: { float32: 'brg_matmul:avx512_core', bfloat16: 'brg_matmul:avx512_core_amx' },
    amxInUse: true,
    threads: 2,
    ompWaitPolicy: 'PASSIVE',
  };

  it('names the CPU, its kernel flags, the kernel oneDNN runs per dtype, and whether AMX is used', () => {
    const line = describeMachine(machine);
    expect(line).toContain(
      'ran on: Intel(R) Xeon(R) Platinum, 2 cores (avx512f avx512_bf16 amx_tile amx_bf16)',
    );
    expect(line).toContain('bfloat16 brg_matmul:avx512_core_amx (AMX in use)');
    expect(line).toContain('2 threads, OMP_WAIT_POLICY=PASSIVE');
    expect(describeMachine({ ...machine, amxInUse: false, onednnLinear: {} })).toContain('(AMX not in use)');
  });
});
