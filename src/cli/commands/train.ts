/**
 * `agentmath train`: `sft` (every model, train-sft.ts), `rl` (train-rl.ts), and `compare`: the
 * tool model and the text-only baseline side by side from their training reports.
 */
import type { Command } from 'commander';
import { embeddedModelPaths } from '../../model/index.ts';
import { readTrainingReport, renderComparison } from '../../train/index.ts';
import { registerTrainRl } from './train-rl.ts';
import { registerTrainSft } from './train-sft.ts';

export function registerTrain(program: Command): void {
  const train = program.command('train').description('train a model: SFT, agentic RL');
  registerTrainSft(train);
  train
    .command('compare')
    .description('held-out accuracy by level of the tool model and the text-only baseline, side by side')
    .option('--tool <dir>', 'run folder of the tool model (default .agentmath/models/arith-tool)')
    .option('--text <dir>', 'run folder of the text-only model (default .agentmath/models/arith-text)')
    .option('--json', 'print both reports as JSON')
    .action(async (flags: { tool?: string; text?: string; json?: boolean }) => {
      const paths = embeddedModelPaths();
      const tool = await readTrainingReport(flags.tool ?? paths.tool);
      const text = await readTrainingReport(flags.text ?? paths.text);
      process.stdout.write(
        flags.json ? `${JSON.stringify({ tool, text }, null, 2)}\n` : renderComparison(tool, text),
      );
    });
  registerTrainRl(train);
}
