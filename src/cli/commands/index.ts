import type { Command } from 'commander';
import { registerBench } from './bench.ts';
import { registerCheck } from './check.ts';
import { registerEngine } from './engine.ts';
import { registerEval } from './eval.ts';
import { registerGrade } from './grade.ts';
import { registerInspect } from './inspect.ts';
import { registerModel } from './model.ts';
import { registerQuickstart } from './quickstart.ts';
import { registerReport } from './report.ts';
import { registerRollout } from './rollout.ts';
import { registerSandbox } from './sandbox.ts';
import { registerSimulate } from './simulate.ts';
import { registerSolve } from './solve.ts';
import { registerSynth } from './synth.ts';
import { registerTasks } from './tasks.ts';
import { registerTrain } from './train.ts';
import { registerTrainer } from './trainer.ts';

/** Adds every subcommand to the program; one line per command file. */
export function registerCommands(program: Command): void {
  registerQuickstart(program);
  registerCheck(program);
  registerEngine(program);
  registerGrade(program);
  registerBench(program);
  registerInspect(program);
  registerSandbox(program);
  registerSolve(program);
  registerSynth(program);
  registerTasks(program);
  registerTrain(program);
  registerTrainer(program);
  registerModel(program);
  registerEval(program);
  registerReport(program);
  registerRollout(program);
  registerSimulate(program);
}
