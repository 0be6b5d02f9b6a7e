/**
 * `bench engine --model DIR --profile`: where a decode step of the engine goes on this machine.
 * `agentmath_engine.decode_profile` builds the engine as the worker does (same decode dtype,
 * linear weights and threads) and drives its loop itself, so torch's profiler sees every op: per
 * concurrency, the step's wall time, the engine's phases (forward, sampling, bookkeeping), each
 * op's self time as a share of the profiled steps, and the share no op accounts for (Python and
 * dispatch between ops).
 */
import { startPythonLineProcess } from './python-line-process.ts';

export type DecodeProfileOp = { name: string; share: number; callsPerStep: number; msPerStep: number };

export type DecodeProfile = {
  concurrency: number;
  /** Median wall time of a decode step, without the profiler. */
  stepMs: number;
  /** Wall time of a decode step under the profiler (what the shares are of). */
  profiledStepMs: number;
  phases: { name: string; share: number }[];
  /** The ops with the most self time, most first. */
  ops: DecodeProfileOp[];
  /** Share of the profiled time outside every op: Python of the model and the engine, dispatch. */
  outsideOpsShare: number;
};

export type DecodeProfileOptions = {
  model: string;
  decodeDtype: string;
  decodeLinear: string;
  threads: number;
  /** One profile per entry: the first `count` prompts decode together. */
  prompts: number[][];
  concurrency: number[];
  steps?: number;
  python?: string;
};

export async function runDecodeProfile(options: DecodeProfileOptions): Promise<DecodeProfile[]> {
  const { model, decodeDtype, decodeLinear, threads, prompts, concurrency, steps = 8 } = options;
  const profiler = await startPythonLineProcess({
    module: 'agentmath_engine.decode_profile',
    args: [
      '--model',
      model,
      '--threads',
      String(threads),
      '--decode-dtype',
      decodeDtype,
      '--decode-linear',
      decodeLinear,
      '--max-running-requests',
      String(Math.max(...concurrency)),
    ],
    ...(options.python === undefined ? {} : { python: options.python }),
  });
  try {
    const profiles: DecodeProfile[] = [];
    for (const count of concurrency) {
      profiles.push(
        await profiler.request<DecodeProfile>({
          command: 'profile',
          prompts: prompts.slice(0, count),
          steps,
        }),
      );
    }
    return profiles;
  } finally {
    await profiler.stop();
  }
}

const percent = (share: number) => `${(100 * share).toFixed(1)}%`;

/** The profile tables `bench engine --model --profile` prints. */
export function renderDecodeProfile(profiles: DecodeProfile[]): string {
  const lines = [
    'where a decode step goes (the engine in one process, its own loop under torch.profiler; shares of the profiled steps):',
  ];
  for (const profile of profiles) {
    const phases = profile.phases.map((phase) => `${phase.name} ${percent(phase.share)}`).join(', ');
    lines.push(
      '',
      `${profile.concurrency} concurrent: ${profile.stepMs.toFixed(1)} ms a step (${profile.profiledStepMs.toFixed(1)} under the profiler); ${phases}; outside any op ${percent(profile.outsideOpsShare)}`,
      'op | share | calls a step | ms a step',
      '-- | ----- | ------------ | ---------',
    );
    for (const op of profile.ops) {
      lines.push(
        `${op.name} | ${percent(op.share)} | ${op.callsPerStep.toFixed(0)} | ${op.msPerStep.toFixed(2)}`,
      );
    }
  }
  return `${lines.join('\n')}\n`;
}
