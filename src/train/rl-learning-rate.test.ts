import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultRlLearningRate, safetensorsParameterCount } from './rl-learning-rate.ts';

const folder = mkdtempSync(join(tmpdir(), 'agentmath-rl-lr-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** A safetensors file: 8-byte little-endian header length, the JSON header, the data. */
function writeSafetensors(path: string, tensors: Record<string, number[]>): void {
  let offset = 0;
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  for (const [name, shape] of Object.entries(tensors)) {
    const bytes = shape.reduce((product, size) => product * size, 1) * 2;
    header[name] = { dtype: 'BF16', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = Buffer.from(JSON.stringify(header));
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(path, Buffer.concat([length, json, Buffer.alloc(offset)]));
}

describe('the RL learning rate of a model', () => {
  it('is the field’s 1e-6 from 1e9 parameters up, grows as √(1e9/N) down to 10M, and is 2e-4 below', () => {
    expect(defaultRlLearningRate(30.5e9)).toBe(1e-6);
    expect(defaultRlLearningRate(1e9)).toBe(1e-6);
    expect(defaultRlLearningRate(134.5e6)).toBe(2.7e-6); // SmolLM2-135M
    expect(defaultRlLearningRate(1e7)).toBe(1e-5);
    expect(defaultRlLearningRate(9.9e6)).toBe(2e-4);
    expect(defaultRlLearningRate(2e5)).toBe(2e-4);
    expect(() => defaultRlLearningRate(0)).toThrow(RangeError);
  });

  it('counts parameters from the safetensors headers of every shard, reading no weights', () => {
    const model = join(folder, 'sharded');
    rmSync(model, { recursive: true, force: true });
    mkdirSync(model);
    writeSafetensors(join(model, 'model-00001-of-00002.safetensors'), { 'a.weight': [3, 4], 'a.bias': [4] });
    writeSafetensors(join(model, 'model-00002-of-00002.safetensors'), { 'b.weight': [2, 5, 7] });
    writeFileSync(join(model, 'config.json'), '{}');
    expect(safetensorsParameterCount(model)).toBe(12 + 4 + 70);
    const empty = join(folder, 'empty');
    mkdirSync(empty);
    expect(safetensorsParameterCount(empty)).toBeNull();
  });
});
