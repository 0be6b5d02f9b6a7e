/**
 * `agentmath trainer serve`: the distributed trainer as a service (FSDP2 under torchrun; rank 0
 * listens) for `train rl` or any client of its routes. A non-loopback host needs a token.
 */
import type { Command } from 'commander';
import { checkBindAuth } from '../../shared/bind-auth.ts';
import { startTrainerService } from '../../train/index.ts';
import { hostOption, integerOption, numberOption, usageError } from '../cli-options.ts';
import { CPU_OFFLOAD_HELP } from '../cpu-offload-option.ts';
import { holdSignals, interruptSignal } from '../process-lifecycle.ts';
import {
  assertTrainerCapacity,
  CAPACITY_OVERRIDE,
  CAPACITY_OVERRIDE_HELP,
} from '../trainer-capacity-check.ts';

const TOKEN_VARIABLE = 'AGENTMATH_TRAINER_TOKEN';

type TrainerServeFlags = {
  model: string;
  reference?: string;
  nproc: number;
  host: string;
  port: number;
  token?: string;
  /** false with --no-auth (commander's negated option). */
  auth: boolean;
  microBatchTokens: number;
  activationCheckpointing?: boolean;
  logitsChunkTokens: number;
  memoryLimitGb: number;
  sp: number;
  cpuOffload?: boolean;
  nnodes?: number;
  nodeRank?: number;
  rdzvEndpoint?: string;
  rdzvId?: string;
  /** false with --no-capacity-check. */
  capacityCheck?: boolean;
};

export function registerTrainer(program: Command): void {
  const trainer = program
    .command('trainer')
    .description('the distributed trainer (FSDP2, any Hugging Face causal LM)');
  trainer
    .command('serve')
    .description('serve the trainer: SFT/GRPO steps, scoring, checkpoints and Hugging Face export over HTTP')
    .requiredOption('--model <dir>', 'Hugging Face model folder to train')
    .option('--reference <dir>', 'the KL reference (default: --model)')
    .option(
      '--nproc <p>',
      'processes on this node (one per GPU; gloo on CPU)',
      integerOption({ min: 1, max: 1024 }),
      1,
    )
    .option('--host <h>', 'address rank 0 listens on', hostOption, '127.0.0.1')
    .option('--port <n>', 'port (0 = any free one)', integerOption({ min: 0, max: 65535 }), 0)
    .option('--token <t>', `bearer token clients must send (or ${TOKEN_VARIABLE})`)
    .option('--no-auth', 'serve a non-loopback host without a token')
    .option(
      '--micro-batch-tokens <n>',
      'token budget of a packed micro-batch',
      integerOption({ min: 16 }),
      8192,
    )
    .option('--activation-checkpointing', 'recompute activations in the backward pass (less memory)')
    .option(
      '--logits-chunk-tokens <n>',
      'tokens per LM-head chunk when scoring (0: full [T x V] logits)',
      integerOption({ min: 0 }),
      512,
    )
    .option(
      '--memory-limit-gb <g>',
      'GiB one rank may hold (0: the device memory); a step estimated above it is refused before it runs',
      numberOption({ min: 0 }),
      0,
    )
    .option(
      '--sp <n>',
      'sequence parallelism: ranks of this node that split each packed row (must divide --nproc and the attention heads)',
      integerOption({ min: 1 }),
      1,
    )
    .option('--cpu-offload', CPU_OFFLOAD_HELP)
    .option('--nnodes <n>', "torchrun's node count (multi-node)", integerOption({ min: 1 }))
    .option('--node-rank <r>', "torchrun's node rank", integerOption({ min: 0 }))
    .option('--rdzv-endpoint <host:port>', "torchrun's rendezvous endpoint (node 0's address)")
    .option('--rdzv-id <id>', "torchrun's rendezvous id (the same on every node)")
    .option(CAPACITY_OVERRIDE, CAPACITY_OVERRIDE_HELP)
    .action(async (flags: TrainerServeFlags) => {
      // An empty token (flag or variable) is refused by the bind rule, as `engine serve` does.
      const token = flags.token ?? process.env[TOKEN_VARIABLE];
      const warning = checkBindAuth({
        server: 'trainer serve',
        host: flags.host,
        token,
        tokenSource: `--token or ${TOKEN_VARIABLE}`,
        noAuth: !flags.auth,
        risk: 'changes the weights it trains',
      });
      assertTrainerCapacity({
        processes: flags.nproc,
        model: flags.model,
        flag: '--nproc',
        check: flags.capacityCheck,
      });
      if (flags.nproc % flags.sp !== 0)
        throw usageError(`--sp ${flags.sp}: must divide --nproc ${flags.nproc}`);
      if (warning !== null) process.stderr.write(`${warning}\n`);
      const multiNode =
        flags.nnodes === undefined
          ? undefined
          : [
              '--nnodes',
              String(flags.nnodes),
              ...(flags.nodeRank === undefined ? [] : ['--node-rank', String(flags.nodeRank)]),
              '--rdzv-backend',
              'c10d',
              ...(flags.rdzvEndpoint === undefined ? [] : ['--rdzv-endpoint', flags.rdzvEndpoint]),
              ...(flags.rdzvId === undefined ? [] : ['--rdzv-id', flags.rdzvId]),
            ];
      const release = holdSignals();
      const service = await startTrainerService({
        model: flags.model,
        ...(flags.reference === undefined ? {} : { reference: flags.reference }),
        processes: flags.nproc,
        host: flags.host,
        port: flags.port,
        ...(token === undefined ? {} : { token }),
        ...(flags.auth ? {} : { noAuth: true }),
        microBatchTokens: flags.microBatchTokens,
        activationCheckpointing: flags.activationCheckpointing === true,
        logitsChunkTokens: flags.logitsChunkTokens,
        memoryLimitGb: flags.memoryLimitGb,
        sequenceParallel: flags.sp,
        cpuOffload: flags.cpuOffload === true,
        ...(multiNode === undefined ? {} : { torchrunArgs: multiNode }),
        onLog: (line) => process.stderr.write(`${line}\n`),
        signal: interruptSignal(),
      });
      if (service.url === '') {
        process.stderr.write(`joined the job as node ${flags.nodeRank ?? '?'}; rank 0 serves the routes\n`);
      } else {
        const state = await service.client.state();
        process.stderr.write(
          `trainer listening on ${service.url}: ${state.model}, ${state.parameters.toLocaleString('en-US')} parameters, ` +
            `${state.worldSize} process(es) on ${state.device} (${state.computeDtype})\n`,
        );
      }
      const stopped = new Promise<void>((resolve) =>
        interruptSignal().addEventListener('abort', () => resolve()),
      );
      const code = await Promise.race([service.exited, stopped.then(() => null)]);
      await service.stop();
      release();
      if (code !== null && code !== 0) process.exitCode = 1;
    });
}
