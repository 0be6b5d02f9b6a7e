import { resolve } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { RL_PRESETS, type RlPresetName, resolveRlConfig } from '../../train/index.ts';
import { rlRunConfigSchema } from '../../train/rl-run-config.ts';
import { addRlConfigFlags, flagOfField, RL_CONFIG_FLAGS, rlConfigInput } from './train-rl-options.ts';

/** The configuration input of `train rl ARGS`, with the layers given. */
function inputOf(args: string[], layers: { preset?: RlPresetName; saved?: Record<string, unknown> } = {}) {
  const command = addRlConfigFlags(new Command('rl').exitOverride());
  command.parse(args, { from: 'user' });
  return rlConfigInput(command, layers).input;
}

describe('train rl options: one table from flags to the configuration', () => {
  it('sets a field only from what the command line gave, with the path made absolute', () => {
    expect(inputOf([])).toEqual({});
    expect(inputOf(['--model', 'm', '--batch-size', '3', '--clip-low', '0.1', '--no-decontaminate'])).toEqual(
      {
        init: resolve('m'),
        batchSize: 3,
        clipEpsilonLow: 0.1,
        decontaminate: false,
      },
    );
  });

  it('takes the command line over the saved run, the saved run over the preset, the preset over the defaults', () => {
    const input = inputOf(['--batch-size', '2'], {
      preset: 'cpu',
      saved: { batchSize: 9, groupSize: 6, command: 'train rl' },
    });
    expect(input).toMatchObject({ ...RL_PRESETS.cpu, batchSize: 2, groupSize: 6 });
    expect(input).not.toHaveProperty('command');
  });

  it('--sandbox-preload: module names, or none for none; anything else is refused before the run', () => {
    expect(inputOf(['--sandbox-preload', 'none'])).toEqual({ sandboxPreload: [] });
    expect(inputOf(['--sandbox-preload', 'sympy,scipy.optimize'])).toEqual({
      sandboxPreload: ['sympy', 'scipy.optimize'],
    });
    expect(() => inputOf(['--sandbox-preload', 'os;rm -rf'])).toThrow(/not a module name/);
    expect(() => inputOf(['--sandbox-preload', 'sympy,,numpy'])).toThrow(/empty items/);
    expect(resolveRlConfig({ init: '/m', sandboxPreload: [] }).sandboxPreload).toEqual([]);
    expect(resolveRlConfig({ init: '/m' }).sandboxPreload).toBeNull();
    // Where the code runs, not what is trained: not in the run's config.json, so a resume may change it.
    expect(Object.keys(rlRunConfigSchema.shape)).not.toContain('sandboxPreload');
  });

  it('cpu preset: one segment per trajectory, so the first step finishes its trajectories and trains', () => {
    const config = resolveRlConfig({ ...inputOf(['--steps', '1'], { preset: 'cpu' }), init: '/m' });
    // A trajectory's segment is maxTokens / partialRollouts: the whole budget in one step.
    expect(config.maxTokens! / config.partialRollouts).toBe(512);
  });

  it('refuses an option the run would record and not use, naming it and what it needs', () => {
    expect(() => inputOf(['--explore', '0.3'])).toThrow('--explore: has no effect without --skip-history');
    expect(() => inputOf(['--explore', '0.3', '--skip-history'])).not.toThrow();
    expect(() => inputOf(['--rollout-is-threshold-lower', '0.5', '--rollout-correction', 'tis'])).toThrow(
      '--rollout-is-threshold-lower: has no effect without --rollout-correction mis',
    );
  });

  it('names each field by its flag', () => {
    expect(flagOfField('init')).toBe('--model');
    expect(flagOfField('problemPool')).toBe('--problems');
    for (const entry of RL_CONFIG_FLAGS) expect(entry.flags.startsWith(flagOfField(entry.field))).toBe(true);
  });
});
