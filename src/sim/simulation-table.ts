/**
 * Text and JSON forms of a simulation report: the table `agentmath simulate` prints, and the
 * `--json` shape the issue fixes (`workload`, `bound.stepSeconds`, `configurations[]` with
 * `name`, `stepSeconds`, `speedup`, `tokensPerSecond`, `reprefillTokens`, `preemptions`,
 * `busyFraction`).
 */
import type { CalibrationReport } from './calibration-run.ts';
import type { SimulationReport } from './simulate.ts';

export function simulationJson(report: SimulationReport): unknown {
  return {
    workload: report.workload,
    steps: report.steps,
    bound: report.bound,
    configurations: report.configurations.map((configuration) => ({
      name: configuration.name,
      stepSeconds: configuration.stepSeconds,
      groupsKept: configuration.groupsKept,
      batchSeconds: configuration.batchSeconds,
      speedup: configuration.speedup,
      batchSpeedup: configuration.batchSpeedup,
      tokensPerSecond: configuration.tokensPerSecond,
      reprefillTokens: configuration.reprefillTokens,
      reprefillByCause: configuration.reprefillByCause,
      kvOccupancy: configuration.kvOccupancy,
      preemptions: configuration.preemptions,
      busyFraction: configuration.busyFraction,
      realSeconds: configuration.realSeconds,
      steps: configuration.steps,
    })),
  };
}

export function simulationTable(report: SimulationReport): string {
  const groups = report.workload.stepPrompts;
  const header = [
    'configuration',
    'step s',
    'speedup',
    'groups kept/step',
    `s per ${groups} kept groups`,
    'speedup per group',
    'tokens/s',
    're-prefill tok/step',
    'preempt/step',
    'GPU busy',
    'per group ÷ bound',
  ];
  const times = (value: number | null) => (value === null ? '—' : `${value.toFixed(2)}x`);
  const rows = report.configurations.map((configuration) => [
    configuration.name,
    configuration.stepSeconds.toFixed(0),
    times(configuration.speedup),
    configuration.groupsKept.toFixed(1),
    configuration.batchSeconds.toFixed(0),
    times(configuration.batchSpeedup),
    Math.round(configuration.tokensPerSecond).toLocaleString('en-US'),
    Math.round(configuration.reprefillTokens).toLocaleString('en-US'),
    configuration.preemptions.toFixed(1),
    `${(100 * configuration.busyFraction).toFixed(0)}%`,
    (configuration.batchSeconds / report.bound.stepSeconds).toFixed(2),
  ]);
  const { bound } = report;
  rows.push(['lower bound', '', '', '', bound.stepSeconds.toFixed(0), '', '', '', '', '', '1.00']);
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
    ],
    report.configurations.map(({ name, reprefillByCause: cause, kvOccupancy }) => [
      name,
      millions(cause.moved),
      millions(cause.evicted),
      millions(cause.weightUpdate),
      millions(cause.preempted),
      `${(100 * kvOccupancy.body).toFixed(0)}%`,
      `${(100 * kvOccupancy.tail).toFixed(0)}%`,
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
    formatTable(header, rows),
    ...warning,
    causes,
    `bound: work ${bound.workSeconds.toFixed(0)} s (${bound.workSecondsIgnoringKv.toFixed(0)} s if KV capacity did not limit the batch), ` +
      `critical path ${bound.criticalPathSeconds.toFixed(0)} s`,
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
