import type { Command } from 'commander';
import { registerAgentBench } from './bench-agent.ts';
import { registerGraderBench } from './bench-grader.ts';
import { registerRolloutBench } from './bench-rollout.ts';
import { registerSandboxBench } from './bench-sandbox.ts';
import { registerTokenizerBench } from './bench-tokenizer.ts';
import { registerTrainerBench } from './bench-trainer.ts';
import { registerEngineBench, registerPrefixCacheBench } from './engine.ts';

/** `agentmath bench <thing>`: speed figures, printed as a table or JSON. */
export function registerBench(program: Command): void {
  const bench = program.command('bench').description('measure speed: p50/p99 and a baseline in the same run');
  registerGraderBench(bench);
  registerSandboxBench(bench);
  registerAgentBench(bench);
  registerEngineBench(bench);
  registerPrefixCacheBench(bench);
  registerRolloutBench(bench);
  registerTokenizerBench(bench);
  registerTrainerBench(bench);
}
