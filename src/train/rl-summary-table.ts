/**
 * The figures of one or more `train rl` runs as two Markdown tables, the way docs/rl.md reports
 * its experiments (`agentmath report RUN --compare RUN… --table`):
 * - held-out accuracy at every evaluation, by level at the last one, greedy code frequency, and
 *   the first evaluated step at which accuracy reached `--target` (if given); an evaluation that
 *   did not run shows as "missing", never as a figure;
 * - the rollout's figures over the run's first and second half (accuracy, code frequency,
 *   response length), their Pearson correlation with the step, the self-correction rate, groups
 *   kept and dropped, and model tokens sampled.
 * Pure: reads only what `readRlRun` loaded.
 */
import type { RlMetrics } from './rl-metrics.ts';
import { isMeasuredEval } from './rl-records.ts';
import type { RlReportRun } from './rl-report.ts';

export type RlSummaryOptions = {
  /** Held-out accuracy (a fraction) whose first reaching step is reported. */
  target?: number;
};

/** Both tables, separated by a blank line. */
export function rlSummaryTables(runs: readonly RlReportRun[], options: RlSummaryOptions = {}): string {
  return `${heldOutTable(runs, options)}\n\n${rolloutTable(runs)}`;
}

function heldOutTable(runs: readonly RlReportRun[], options: RlSummaryOptions): string {
  const steps = [...new Set(runs.flatMap((run) => run.evals.map((record) => record.step)))].sort(
    (left, right) => left - right,
  );
  const levels = [
    ...new Set(
      runs.flatMap((run) =>
        run.evals
          .filter(isMeasuredEval)
          .flatMap((record) =>
            record.byLevel.flatMap((entry) => (typeof entry.level === 'number' ? [entry.level] : [])),
          ),
      ),
    ),
  ].sort((left, right) => left - right);
  const header = [
    'run',
    ...steps.map((step) => `held-out after step ${step}`),
    levels.length === 0 ? 'by level at the last' : `level ${levels.join(' / ')} at the last`,
    'greedy code freq. first → last',
    ...(options.target === undefined ? [] : [`first step ≥ ${percent(options.target)}`]),
  ];
  const rows = runs.map((run) => {
    const byStep = new Map(run.evals.map((record) => [record.step, record]));
    const measured = run.evals.filter(isMeasuredEval);
    const first = measured[0];
    const last = measured.at(-1);
    const reached = options.target === undefined ? undefined : reachedAt(run, options.target);
    return [
      run.label,
      ...steps.map((step) => {
        const record = byStep.get(step);
        if (record === undefined) return '–';
        return isMeasuredEval(record) ? percent(record.accuracy) : 'missing';
      }),
      last === undefined
        ? '–'
        : levels
            .map((level) => {
              const entry = last.byLevel.find((candidate) => candidate.level === level);
              return entry === undefined ? '–' : percent(entry.accuracy);
            })
            .join(' / '),
      first === undefined || last === undefined
        ? '–'
        : `${percent(first.codeFrequency)} → ${percent(last.codeFrequency)}`,
      ...(options.target === undefined ? [] : [reached === null ? 'not reached' : String(reached)]),
    ];
  });
  return markdownTable(header, rows);
}

/** The step of the first evaluation at or above the target, or null. */
function reachedAt(run: RlReportRun, target: number): number | null {
  return run.evals.find((record) => isMeasuredEval(record) && record.accuracy >= target)?.step ?? null;
}

function rolloutTable(runs: readonly RlReportRun[]): string {
  const header = [
    'run',
    'steps',
    'rollout accuracy, 1st → 2nd half',
    'rollout code freq., 1st → 2nd half',
    'response tokens, 1st → 2nd half',
    'corr. with step (acc. / code / length)',
    'self-correction, mean (max)',
    'kept / dropped groups',
    'tokens sampled',
  ];
  const rows = runs.map((run) => {
    const metrics = [...run.metrics].sort((left, right) => left.step - right.step);
    const half = Math.ceil(metrics.length / 2);
    const halves = [metrics.slice(0, half), metrics.slice(half)];
    const halvesOf = (field: keyof RlMetrics, format: (value: number) => string) =>
      halves.map((part) => orDash(mean(values(part, field)), format)).join(' → ');
    const correlationOf = (field: keyof RlMetrics) => {
      const pairs = metrics.flatMap((line) => {
        const value = line[field];
        return typeof value === 'number' ? [[line.step, value] as const] : [];
      });
      return orDash(
        pearson(
          pairs.map(([step]) => step),
          pairs.map(([, value]) => value),
        ),
        (value) => value.toFixed(2),
      );
    };
    const selfCorrection = values(metrics, 'selfCorrectionRate');
    const tokens = [...run.tokensByStep.values()].reduce((total, count) => total + count, 0);
    return [
      run.label,
      String(metrics.length),
      halvesOf('accuracy', (value) => percent(value)),
      halvesOf('codeFrequency', (value) => percent(value)),
      halvesOf('responseTokensMean', (value) => value.toFixed(0)),
      ['accuracy', 'codeFrequency', 'responseTokensMean']
        .map((field) => correlationOf(field as keyof RlMetrics))
        .join(' / '),
      selfCorrection.length === 0
        ? '–'
        : `${percent(mean(selfCorrection) ?? 0)} (${percent(Math.max(...selfCorrection))})`,
      `${sum(metrics.map((line) => line.groupsKept))} / ${sum(metrics.map((line) => line.groupsDropped))}`,
      tokens.toLocaleString('en-US'),
    ];
  });
  return markdownTable(header, rows);
}

function values(metrics: readonly RlMetrics[], field: keyof RlMetrics): number[] {
  return metrics.flatMap((line) => (typeof line[field] === 'number' ? [line[field] as number] : []));
}

function mean(list: readonly number[]): number | null {
  return list.length === 0 ? null : sum(list) / list.length;
}

function sum(list: readonly number[]): number {
  return list.reduce((total, value) => total + value, 0);
}

/** Pearson's r, or null when either side is constant or there are fewer than 3 points. */
export function pearson(xs: readonly number[], ys: readonly number[]): number | null {
  if (xs.length !== ys.length || xs.length < 3) return null;
  const meanX = sum(xs) / xs.length;
  const meanY = sum(ys) / ys.length;
  let covariance = 0;
  let varianceX = 0;
  let varianceY = 0;
  for (let index = 0; index < xs.length; index++) {
    const dx = (xs[index] as number) - meanX;
    const dy = (ys[index] as number) - meanY;
    covariance += dx * dy;
    varianceX += dx * dx;
    varianceY += dy * dy;
  }
  if (varianceX === 0 || varianceY === 0) return null;
  return covariance / Math.sqrt(varianceX * varianceY);
}

function orDash(value: number | null, format: (value: number) => string): string {
  return value === null ? '–' : format(value);
}

function percent(value: number): string {
  return `${(100 * value).toFixed(1)}%`;
}

function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
