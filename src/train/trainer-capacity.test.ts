import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  modelFp32Bytes,
  RANK_BASE_BYTES,
  trainerCapacityProblem,
  trainerMemoryBytes,
} from './trainer-capacity.ts';

const GIB = 1024 ** 3;
const folder = mkdtempSync(join(tmpdir(), 'agentmath-trainer-capacity-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const problem = (processes: number, modelBytes: number, cores: number, memoryBytes: number) =>
  trainerCapacityProblem({
    processes,
    modelBytes,
    capacity: { cores, memoryBytes },
    flag: '--nproc',
    override: '--no-capacity-check',
  });

describe('trainer capacity', () => {
  it('refuses more ranks than cores, naming the option and the override', () => {
    expect(problem(2, 2e6, 2, 8 * GIB)).toBeNull();
    expect(problem(64, 2e6, 2, 8 * GIB)).toMatch(
      /^--nproc 64: 64 trainer processes need one core each \(this machine has 2\) and about 18\.\d GiB of memory .*; lower --nproc, or pass --no-capacity-check/,
    );
  });

  it('refuses ranks whose estimated memory exceeds the machine: each loads the whole model, the optimizer is sharded', () => {
    const model = 2 * GIB; // a 0.5B-parameter model in fp32
    expect(trainerMemoryBytes(4, model)).toBe(4 * (RANK_BASE_BYTES + model) + 3 * model);
    expect(problem(4, model, 64, 64 * GIB)).toBeNull();
    expect(problem(4, model, 64, 8 * GIB)).toMatch(
      /need about 15\.2 GiB of memory .*model's 2048 MiB in fp32; this machine has 8\.0 GiB/,
    );
  });

  it("estimates the fp32 weights from the weight files and config.json's dtype", () => {
    writeFileSync(
      join(folder, 'config.json'),
      JSON.stringify({ model_type: 'qwen3', torch_dtype: 'bfloat16' }),
    );
    writeFileSync(join(folder, 'model-00001-of-00002.safetensors'), Buffer.alloc(1000));
    writeFileSync(join(folder, 'model-00002-of-00002.safetensors'), Buffer.alloc(500));
    writeFileSync(join(folder, 'tokenizer.json'), '{}');
    expect(modelFp32Bytes(folder)).toBe(3000);
    expect(modelFp32Bytes(join(folder, 'missing'))).toBe(0);
  });
});
