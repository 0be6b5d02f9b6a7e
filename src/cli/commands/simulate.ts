/**
 * `agentmath simulate`: the real rollout scheduler and router over simulated replicas and
 * sandbox, in virtual time, per configuration, with the lower bound; `--calibrate` fits the
 * cost model to the embedded worker and compares a real job's wall time with its simulation.
 */
import type { Command } from 'commander';
import { findEmbeddedModel } from '../../engine/embedded/index.ts';
import {
  calibrationTable,
  loadWorkload,
  runCalibration,
  SIM_CONFIGURATIONS,
  simulate,
  simulationJson,
  simulationTable,
} from '../../sim/index.ts';

type SimulateFlags = {
  workload: string;
  steps: string;
  configuration?: string[];
  json?: boolean;
  calibrate?: boolean;
  model?: string;
  problems: string;
  concurrency: string;
  kvBudget: string;
  tailCut?: string;
};

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description(
      'the rollout scheduler and router at paper scale in virtual time, per configuration, with the lower bound',
    )
    .option(
      '--workload <name|file>',
      'built-in workload (paper, heavy-tail, tool-heavy) or a JSON file',
      'paper',
    )
    .option('--steps <n>', 'rollout steps per configuration (the first is not counted)', '16')
    .option(
      '--configuration <name...>',
      `only these configurations (${SIM_CONFIGURATIONS.map((configuration) => configuration.name).join(', ')})`,
    )
    .option(
      '--kv-budget <factor>',
      "with async+partial+prefix-aware+kv-budget: the admission budget as a multiple of the replicas' total KV capacity",
      '1',
    )
    .option(
      '--tail-cut <fraction>',
      'with the +tail-cut configuration: end a step once the KV held falls below this fraction of its peak (default 0.5)',
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
    .option('--problems <n>', 'with --calibrate: arith problems in the real job', '96')
    .option('--concurrency <n>', 'with --calibrate: trajectories at once', '32')
    .action(async (flags: SimulateFlags) => {
      const count = (name: string, value: string) => {
        const parsed = Number(value);
        if (!Number.isInteger(parsed) || parsed < 1)
          throw new Error(`--${name} must be an integer >= 1 (got "${value}")`);
        return parsed;
      };
      // Progress goes to stderr also with --json: stdout carries only the report.
      const log = (line: string) => process.stderr.write(`${line}\n`);
      if (flags.calibrate && (flags.tailCut !== undefined || flags.kvBudget !== '1'))
        throw new Error(
          '--kv-budget and --tail-cut apply to the simulated configurations, not to --calibrate',
        );
      if (flags.calibrate) {
        const model = flags.model ?? findEmbeddedModel();
        if (model === null)
          throw new Error(
            '--calibrate needs a trained embedded model: pass --model DIR or run `agentmath quickstart` first',
          );
        const report = await runCalibration({
          model,
          problems: count('problems', flags.problems),
          concurrency: count('concurrency', flags.concurrency),
          onProgress: log,
        });
        process.stdout.write(
          flags.json ? `${JSON.stringify(report, null, 2)}\n` : `${calibrationTable(report)}\n`,
        );
        return;
      }
      const workload = loadWorkload(flags.workload);
      const names = flags.configuration;
      const configurations =
        names === undefined
          ? SIM_CONFIGURATIONS.filter((configuration) => configuration.onRequest !== true)
          : SIM_CONFIGURATIONS.filter((configuration) => names.includes(configuration.name));
      const unknown = (names ?? []).filter(
        (name) => !SIM_CONFIGURATIONS.some((configuration) => configuration.name === name),
      );
      if (unknown.length > 0) throw new Error(`--configuration: unknown ${unknown.join(', ')}`);
      const factor = Number(flags.kvBudget);
      if (!Number.isFinite(factor) || factor <= 0)
        throw new Error(`--kv-budget must be a number > 0 (got "${flags.kvBudget}")`);
      if (factor !== 1 && !configurations.some((configuration) => configuration.kvBudget !== undefined))
        throw new Error(
          '--kv-budget applies to async+partial+prefix-aware+kv-budget: name it with --configuration',
        );
      const cut = flags.tailCut === undefined ? null : Number(flags.tailCut);
      if (cut !== null) {
        if (!(cut > 0 && cut < 1))
          throw new Error(`--tail-cut must be a fraction between 0 and 1 (got "${flags.tailCut}")`);
        if (!configurations.some((configuration) => configuration.tailCut !== undefined))
          throw new Error(
            '--tail-cut applies to async+partial+prefix-aware+kv-budget+tail-cut: name it with --configuration',
          );
      }
      const chosen = configurations.map((configuration) => {
        let chosenOne = configuration;
        if (configuration.kvBudget !== undefined && factor !== 1)
          chosenOne = { ...chosenOne, kvBudget: factor, name: `${chosenOne.name}×${factor}` };
        if (configuration.tailCut !== undefined && cut !== null)
          chosenOne = { ...chosenOne, tailCut: cut, name: `${chosenOne.name}@${cut}` };
        return chosenOne;
      });
      log(
        `workload ${workload.name}: ${workload.stepPrompts} prompts x ${workload.groupSize}, ${workload.replicas} replicas`,
      );
      const report = await simulate({
        workload,
        steps: count('steps', flags.steps),
        configurations: chosen,
        onProgress: log,
      });
      process.stdout.write(
        flags.json ? `${JSON.stringify(simulationJson(report), null, 2)}\n` : `${simulationTable(report)}\n`,
      );
    });
}
