/**
 * `agentmath simulate`: the real rollout scheduler and router over simulated replicas and
 * sandbox, in virtual time, per configuration, with the lower bound; `--calibrate` fits the
 * cost model to the embedded worker and compares a real job's wall time with its simulation.
 */
import { type Command, InvalidArgumentError } from 'commander';
import { findEmbeddedModel } from '../../model/index.ts';
import {
  calibrationTable,
  loadWorkload,
  runCalibration,
  SIM_CONFIGURATIONS,
  simulate,
  simulationJson,
  simulationTable,
} from '../../sim/index.ts';
import { integerOption, numberOption, usageError } from '../cli-options.ts';

type SimulateFlags = {
  workload: string;
  steps: number;
  seeds: number;
  maxPolicyLag?: number;
  configuration?: string[];
  json?: boolean;
  calibrate?: boolean;
  model?: string;
  problems?: number;
  concurrency?: number;
  kvBudget: number;
  tailCut?: number;
};

/** A fraction strictly between 0 and 1. */
function fractionOption(value: string): number {
  const parsed = numberOption({ min: 0, minExclusive: true, max: 1 })(value);
  if (parsed >= 1) throw new InvalidArgumentError('expected a fraction between 0 and 1 (both excluded)');
  return parsed;
}

const CALIBRATION_DEFAULTS = { problems: 96, concurrency: 32 };

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description(
      'the rollout scheduler and router at paper scale in virtual time, per configuration, with the lower bound',
    )
    .option(
      '--workload <name|file|->',
      'built-in workload (paper, paper-moe, heavy-tail, tool-heavy, paper-epochs), a JSON file, or - for standard input',
      'paper',
    )
    .option(
      '--steps <n>',
      'rollout steps per configuration (the first is not counted)',
      integerOption({ min: 1, max: 10_000 }),
      16,
    )
    .option(
      '--seeds <n>',
      'workload seeds per configuration (the seed, +1, …): every figure as median (min–max)',
      integerOption({ min: 1, max: 100 }),
      1,
    )
    .option(
      '--max-policy-lag <n>',
      "the rollout's maxPolicyLag (default: the workload's partial rollouts N; production's default is 1)",
      integerOption({ min: 0, max: 1000 }),
    )
    .option(
      '--configuration <name...>',
      `only these configurations (${SIM_CONFIGURATIONS.map((configuration) => configuration.name).join(', ')})`,
    )
    .option(
      '--kv-budget <factor>',
      "with async+partial+prefix-aware+kv-budget: the admission budget as a multiple of the replicas' total KV capacity",
      numberOption({ min: 0, minExclusive: true, max: 1000 }),
      1,
    )
    .option(
      '--tail-cut <fraction>',
      'with the +tail-cut configuration: end a step once the KV held falls below this fraction of its peak (default 0.5)',
      fractionOption,
    )
    .option('--json', 'print the report as JSON')
    .option(
      '--calibrate',
      'fit the cost model to the embedded worker and predict a real job (see docs/simulation.md)',
    )
    .option(
      '--model <dir>',
      'with --calibrate: the embedded model folder (default: the trained arith-tool model)',
    )
    .option(
      '--problems <n>',
      `with --calibrate: arith problems in the real job (default ${CALIBRATION_DEFAULTS.problems})`,
      integerOption({ min: 1, max: 100_000 }),
    )
    .option(
      '--concurrency <n>',
      `with --calibrate: trajectories at once (default ${CALIBRATION_DEFAULTS.concurrency})`,
      integerOption({ min: 1, max: 100_000 }),
    )
    .action(async (flags: SimulateFlags) => {
      // Progress goes to stderr also with --json: stdout carries only the report.
      const log = (line: string) => process.stderr.write(`${line}\n`);
      if (flags.calibrate && (flags.tailCut !== undefined || flags.kvBudget !== 1))
        throw usageError(
          '--kv-budget and --tail-cut apply to the simulated configurations, not to --calibrate',
        );
      if (!flags.calibrate) {
        const calibrationOnly = (['problems', 'concurrency', 'model'] as const).filter(
          (name) => flags[name] !== undefined,
        );
        if (calibrationOnly.length > 0)
          throw usageError(
            `--${calibrationOnly.join(', --')} appl${calibrationOnly.length === 1 ? 'ies' : 'y'} only with --calibrate`,
          );
      }
      if (flags.calibrate) {
        const model = flags.model ?? findEmbeddedModel();
        if (model === null)
          throw new Error(
            '--calibrate needs a trained embedded model: pass --model DIR or run `agentmath quickstart` first',
          );
        const report = await runCalibration({
          model,
          problems: flags.problems ?? CALIBRATION_DEFAULTS.problems,
          concurrency: flags.concurrency ?? CALIBRATION_DEFAULTS.concurrency,
          onProgress: log,
        });
        process.stdout.write(
          flags.json ? `${JSON.stringify(report, null, 2)}\n` : `${calibrationTable(report)}\n`,
        );
        return;
      }
      const names = flags.configuration;
      const unknown = (names ?? []).filter(
        (name) => !SIM_CONFIGURATIONS.some((configuration) => configuration.name === name),
      );
      if (unknown.length > 0)
        throw usageError(
          `--configuration: unknown ${unknown.join(', ')}; the configurations are ${SIM_CONFIGURATIONS.map((configuration) => configuration.name).join(', ')}`,
        );
      const configurations =
        names === undefined
          ? SIM_CONFIGURATIONS.filter((configuration) => configuration.onRequest !== true)
          : SIM_CONFIGURATIONS.filter((configuration) => names.includes(configuration.name));
      const factor = flags.kvBudget;
      if (factor !== 1 && !configurations.some((configuration) => configuration.kvBudget !== undefined))
        throw usageError(
          '--kv-budget applies to async+partial+prefix-aware+kv-budget: name it with --configuration',
        );
      const cut = flags.tailCut ?? null;
      if (cut !== null && !configurations.some((configuration) => configuration.tailCut !== undefined))
        throw usageError(
          '--tail-cut applies to async+partial+prefix-aware+kv-budget+tail-cut: name it with --configuration',
        );
      const chosen = configurations.map((configuration) => {
        let chosenOne = configuration;
        if (configuration.kvBudget !== undefined && factor !== 1)
          chosenOne = { ...chosenOne, kvBudget: factor, name: `${chosenOne.name}×${factor}` };
        if (configuration.tailCut !== undefined && cut !== null)
          chosenOne = { ...chosenOne, tailCut: cut, name: `${chosenOne.name}@${cut}` };
        return chosenOne;
      });
      // The options are checked; only now is the workload read (it may be standard input).
      const workload = loadWorkload(flags.workload);
      log(
        `workload ${workload.name}: ${workload.stepPrompts} prompts x ${workload.groupSize}, ${workload.replicas} replicas`,
      );
      const report = await simulate({
        workload,
        steps: flags.steps,
        seeds: flags.seeds,
        ...(flags.maxPolicyLag === undefined ? {} : { maxPolicyLag: flags.maxPolicyLag }),
        configurations: chosen,
        onProgress: log,
      });
      process.stdout.write(
        flags.json ? `${JSON.stringify(simulationJson(report), null, 2)}\n` : `${simulationTable(report)}\n`,
      );
    });
}
