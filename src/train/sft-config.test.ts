import { describe, expect, it } from 'vitest';
import { resolveSftConfig, SftConfigError } from './sft-config.ts';

describe('resolveSftConfig', () => {
  it('accepts level 0 and a tool share for text data', () => {
    const config = resolveSftConfig({ style: 'text', toolShare: 0.03, levels: [0, 1] });
    expect(config.toolShare).toBe(0.03);
    expect(config.levels).toEqual([0, 1]);
  });

  it('accepts the spaced level 5 and refuses a level above it', () => {
    expect(resolveSftConfig({ levels: [3, 5] }).levels).toEqual([3, 5]);
    expect(() => resolveSftConfig({ levels: [6] })).toThrow(/"levels\.0"/);
  });

  it('refuses a tool share for tool data, naming the field', () => {
    expect(() => resolveSftConfig({ style: 'tool', toolShare: 0.1 })).toThrow(SftConfigError);
    expect(() => resolveSftConfig({ style: 'tool', toolShare: 0.1 })).toThrow(/"toolShare".*--text-only/);
    expect(() => resolveSftConfig({ toolShare: 1.5, style: 'text' })).toThrow(/"toolShare"/);
  });

  it('takes one level weight per level and names the field otherwise', () => {
    expect(resolveSftConfig({ levels: [1, 5], levelWeights: [3, 1] }).levelWeights).toEqual([3, 1]);
    expect(resolveSftConfig({}).levelWeights).toBeNull();
    expect(() => resolveSftConfig({ levels: [1, 5], levelWeights: [3] })).toThrow(
      /"levelWeights" has 1 weights for 2 levels/,
    );
    expect(() => resolveSftConfig({ levels: [1], levelWeights: [0] })).toThrow(/"levelWeights\.0"/);
  });
});
