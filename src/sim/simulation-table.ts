/**
 * Text and JSON forms of a simulation report: the table `agentmath simulate` prints, led by
 * the time per batch of kept groups and its speedup (step time and groups kept beside them,
 * never alone), and the `--json` shape (docs/simulation.md lists its fields).
 */
import type { CalibrationReport } from './calibration-run.ts';
import type { SimulationReport } from './simulate.ts';

export function simulationJson(report: SimulationReport): unknown {
  return {
    workload: report.workload,
    steps: report.steps,
    seeds: report.seeds,
    bound: report.bound,
    configurations: report.configurations.map((configuration) => ({
      name: configuration.name,
      batchSeconds: configuration.batchSeconds,
      batchSpeedup: configuration.batchSpeedup,
      boundBatchSeconds: configuration.boundBatchSeconds,
      batchOverBound: configuration.batchOverBound,
      boundDecidedBatchSeconds: configuration.boundDecidedBatchSeconds,
      stepSeconds: configuration.stepSeconds,
      speedup: configuration.speedup,
      groupsKept: configuration.groupsKept,
      stepParts: configuration.stepParts,
      maxPolicyLag: configuration.maxPolicyLag,
      trainingOverlapped: configuration.trainingOverlapped,
      intervals: configuration.intervals,
      seeds: configuration.seeds,
      tokensPerSecond: configuration.tokensPerSecond,
      reprefillTokens: configuration.reprefillTokens,
      reprefillByCause: configuration.reprefillByCause,
      kvOccupancy: configuration.kvOccupancy,
      preemptions: configuration.preemptions,
      hostLoadedTokens: configuration.hostLoadedTokens,
      abandonment: configuration.abandonment,
      skipping: configuration.skipping,
      busyFraction: configuration.busyFraction,
      realSeconds: configuration.realSeconds,
      steps: configuration.steps,
    })),
  };
}

export function simulationTable(report: SimulationReport): string {
  const groups = report.workload.stepPrompts;
  const several = report.seeds.length > 1;
  const header = [
    'configuration',
    `s per ${groups} kept groups`,
    'speedup per kept group',
    'bound s',
    '÷ bound',
    'bound with dropped s',
    'step s',
    'step speedup',
    'groups kept/step',
    'rollout/train/sync s',
    'tokens/s',
    're-prefill tok/step',
    'preempt/step',
    'GPU busy',
  ];
  const times = (value: number | null) =>
    value === null || Number.isNaN(value) ? '—' : `${value.toFixed(2)}x`;
  // With several seeds a figure reads "median (min–max)".
  const withRange = (
    configuration: SimulationReport['configurations'][number],
    figure: keyof (typeof configuration)['intervals'],
    format: (value: number) => string,
  ) => {
    const interval = configuration.intervals[figure];
    return several
      ? `${format(interval.median)} (${format(interval.min)}–${format(interval.max)})`
      : format(interval.median);
  };
  const seconds = (value: number) => value.toFixed(0);
  const ratio = (value: number) => (Number.isNaN(value) ? '—' : `${value.toFixed(2)}x`);
  const rows = report.configurations.map((configuration) => [
    configuration.name,
    withRange(configuration, 'batchSeconds', seconds),
    configuration.batchSpeedup === null ? '—' : withRange(configuration, 'batchSpeedup', ratio),
    withRange(configuration, 'boundBatchSeconds', seconds),
    withRange(configuration, 'batchOverBound', (value) => value.toFixed(2)),
    withRange(configuration, 'boundDecidedBatchSeconds', seconds),
    withRange(configuration, 'stepSeconds', seconds),
    times(configuration.speedup),
    withRange(configuration, 'groupsKept', (value) => value.toFixed(1)),
    [
      configuration.stepParts.rolloutSeconds,
      configuration.stepParts.trainSeconds,
      configuration.stepParts.weightSyncSeconds,
    ]
      .map((value) => value.toFixed(0))
      .join('/') + (configuration.trainingOverlapped ? ' (overlapped)' : ''),
    Math.round(configuration.tokensPerSecond).toLocaleString('en-US'),
    Math.round(configuration.reprefillTokens).toLocaleString('en-US'),
    configuration.preemptions.toFixed(1),
    `${(100 * configuration.busyFraction).toFixed(0)}%`,
  ]);
  const { bound } = report;
  const millions = (tokens: number) => (tokens / 1e6).toFixed(1);
  const causes = formatTable(
    [
      're-prefill by cause, M tokens/step',
      'moved',
      'evicted',
      'weight update',
      'preempted',
      'KV full: step 0-80%',
      'last 20%',
      'loaded from host',
    ],
    report.configurations.map(({ name, reprefillByCause: cause, kvOccupancy, hostLoadedTokens }) => [
      name,
      millions(cause.moved),
      millions(cause.evicted),
      millions(cause.weightUpdate),
      millions(cause.preempted),
      `${(100 * kvOccupancy.body).toFixed(0)}%`,
      `${(100 * kvOccupancy.tail).toFixed(0)}%`,
      millions(hostLoadedTokens),
    ]),
  );
  const counted = Math.max(1, report.steps - 1);
  const warning =
    counted < 8
      ? [
          `note: ${counted} counted step${counted === 1 ? '' : 's'}: with partial rollout the figures per kept group are ` +
            'dominated by the pipeline of parked trajectories filling (work done in the uncounted first step), ' +
            'and can even fall below the bound; run 16 steps (the default) or more for steady-state figures',
        ]
      : [];
  return [
    `seeds ${report.seeds.join(', ')}${several ? ': median (min–max) over them' : ''}; ` +
      `bound = the groups each configuration kept, rollout and training overlapped, plus one weight sync`,
    formatTable(header, rows),
    ...warning,
    causes,
    `first step's problems (seed ${report.seeds[0]}): rollout bound ${bound.stepSeconds.toFixed(0)} s: work ${bound.workSeconds.toFixed(0)} s ` +
      `(${bound.workSecondsIgnoringKv.toFixed(0)} s if KV capacity did not limit the batch), critical path ${bound.criticalPathSeconds.toFixed(0)} s`,
  ].join('\n');
}

export function calibrationTable(report: CalibrationReport): string {
  const { costModel } = report.fit;
  const lines = [
    `fitted cost model: a = ${costModel.decodeBaseMs.toFixed(3)} ms, b = ${costModel.decodePerSequenceMs.toFixed(4)} ms/sequence, ` +
      `c = ${costModel.decodePerContextTokenMs.toExponential(3)} ms/context token, p = ${costModel.prefillPerTokenMs.toFixed(4)} ms/prefill token ` +
      `(decode fit RMS error ${report.fit.decodeRmsErrorMs.toFixed(2)} ms)`,
    `real job: ${report.problems} arith problems, ${report.concurrency} at once, ${report.sandboxWorkers} sandbox workers, ${report.modelTokens} model tokens, ${report.toolCalls} tool calls (mean ${report.toolMsMean.toFixed(0)} ms)`,
    formatTable(
      ['', 'wall s'],
      [
        ['measured', report.measuredSeconds.toFixed(2)],
        ['predicted', report.predictedSeconds.toFixed(2)],
        ['error', `${(100 * report.relativeError).toFixed(1)}%`],
      ],
    ),
  ];
  return lines.join('\n');
}

function formatTable(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}
