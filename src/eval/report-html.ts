/**
 * The evaluation report: one self-contained HTML page (inline CSS and SVG; no scripts, fonts
 * or network) with the headline metrics, accuracy per problem, distributions of code calls and
 * response lengths, finish reasons, and a per-problem table. Two or more runs appear side by
 * side, sharing axes and bins.
 */
import type { Trajectory } from '../trajectory/trajectory.ts';
import { escapeHtml } from './escape-html.ts';
import { histogram } from './histogram.ts';
import type { RunSummary } from './run-summary.ts';
import { barChart, SERIES_COLORS } from './svg-bar-chart.ts';
import { lengthUnit, responseLength } from './tool-use-stats.ts';

/** One run as the report shows it. */
export type ReportRun = {
  label: string;
  summary: RunSummary;
  trajectories: readonly Trajectory[];
  config?: Record<string, unknown> | null;
};

/** The reports' shared stylesheet (eval and RL pages look alike). */
export const REPORT_STYLE = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;color:#1d2433;background:#fff;padding:0 16px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #dde3ea;padding-bottom:4px}
.sub{color:#5b6777;margin:0 0 16px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #dde3ea;padding:4px 8px;text-align:right}
th{background:#f3f6f9}td.name,th.name{text-align:left}
.chart{display:block;margin:8px 0;max-width:100%;height:auto}
.chart-title{font-size:14px;font-weight:600;fill:#1d2433}.tick{font-size:11px;fill:#5b6777}.legend{font-size:12px;fill:#1d2433}
.axis-label{font-size:12px;fill:#5b6777}.grid{stroke:#e8ecf1}.axis{stroke:#8893a2}
.ok{background:#e3f3e8}.bad{background:#fbe7e7}.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;vertical-align:middle}
`;

const percent = (value: number | null | undefined) =>
  value === null || value === undefined ? '–' : `${(100 * value).toFixed(1)}%`;
const fixed = (value: number, digits = 2) => value.toFixed(digits);

/** The report page for one run, or several runs side by side. */
export function renderReport(
  runs: readonly ReportRun[],
  { title = 'AgentMath evaluation report' } = {},
): string {
  const names = runs.map((run) => run.label);
  const benchmarks = [...new Set(runs.map((run) => run.summary.benchmark))].join(', ');
  const sections = [
    `<h1>${escapeHtml(title)}</h1>`,
    `<p class="sub">benchmark ${escapeHtml(benchmarks)} · ${runs
      .map((run, index) => `${swatch(index)}${escapeHtml(run.label)}`)
      .join(' · ')}</p>`,
    '<h2>Headline metrics</h2>',
    metricsTable(runs),
    '<h2>Accuracy per problem</h2>',
    accuracyChart(runs, names),
    '<h2>Tool use and length</h2>',
    codeCallsChart(runs, names),
    lengthChart(runs, names),
    '<h2>Finish reasons</h2>',
    finishReasonChart(runs, names),
    '<h2>Problems</h2>',
    problemTable(runs),
    '<h2>Configuration</h2>',
    configTable(runs),
  ];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${REPORT_STYLE}</style></head>
<body>
${sections.join('\n')}
</body></html>
`;
}

function swatch(index: number): string {
  return `<span class="swatch" style="background:${SERIES_COLORS[index % SERIES_COLORS.length]}"></span>`;
}

function metricsTable(runs: readonly ReportRun[]): string {
  const ks = [...new Set(runs.flatMap((run) => Object.keys(run.summary.passAtK).map(Number)))].sort(
    (a, b) => a - b,
  );
  const rows: [string, (summary: RunSummary) => string][] = [
    ['problems × k', (s) => `${s.problems} × ${s.k}`],
    [
      'trajectories',
      (s) => `${s.trajectories}${s.complete ? '' : ` of ${s.expectedTrajectories} (incomplete)`}`,
    ],
    ['grades without a verdict (grader unavailable)', (s) => String(s.gradeUnavailable ?? 0)],
    ['avg@k', (s) => percent(s.avgAtK)],
    ...ks.map((k): [string, (summary: RunSummary) => string] => [`pass@${k}`, (s) => percent(s.passAtK[k])]),
    ['maj@k', (s) => percent(s.majAtK)],
    ['code calls / trajectory', (s) => fixed(s.toolUse.codeCallsPerTrajectory)],
    ['trajectories using code', (s) => percent(s.toolUse.codeUsageRate)],
    ['code error rate', (s) => percent(s.toolUse.codeErrorRate)],
    ['self-correction rate', (s) => percent(s.toolUse.selfCorrectionRate)],
    [
      'response length mean / p50 / p90',
      (s) => `${fixed(s.length.mean, 0)} / ${s.length.p50} / ${s.length.p90} ${s.length.unit}`,
    ],
  ];
  const head = `<tr><th class="name">metric</th>${runs.map((run, index) => `<th>${swatch(index)}${escapeHtml(run.label)}</th>`).join('')}</tr>`;
  const body = rows
    .map(
      ([name, cell]) =>
        `<tr><td class="name">${name}</td>${runs.map((run) => `<td>${escapeHtml(cell(run.summary))}</td>`).join('')}</tr>`,
    )
    .join('');
  return `<table>${head}${body}</table>`;
}

function problemIds(runs: readonly ReportRun[]): string[] {
  return [...new Set(runs.flatMap((run) => run.summary.perProblem.map((problem) => problem.id)))];
}

/** Past this many problems one bar each would run into a grey block: a histogram instead. */
const PER_PROBLEM_BARS_MAX = 40;

/** The histogram's bins of avg@k: exactly 0, five fifths in between, exactly 1. */
const AVG_BINS = ['0%', '0–20%', '20–40%', '40–60%', '60–80%', '80–100%', '100%'] as const;

function avgBin(avg: number): number {
  if (avg <= 0) return 0;
  if (avg >= 1) return AVG_BINS.length - 1;
  return 1 + Math.min(4, Math.floor(avg * 5));
}

function accuracyChart(runs: readonly ReportRun[], names: readonly string[]): string {
  const ids = problemIds(runs);
  if (ids.length > PER_PROBLEM_BARS_MAX) {
    return barChart({
      title: `problems by avg@k (${ids.length} problems; each listed in the table below)`,
      categories: AVG_BINS,
      series: runs.map((run, index) => {
        const counts = AVG_BINS.map(() => 0);
        for (const problem of run.summary.perProblem)
          counts[avgBin(problem.avg)] = (counts[avgBin(problem.avg)] ?? 0) + 1;
        return { name: names[index] ?? run.label, values: counts };
      }),
      yLabel: 'problems',
      width: 1040,
      height: 320,
    });
  }
  return barChart({
    title: 'avg@k per problem',
    categories: ids,
    series: runs.map((run, index) => ({
      name: names[index] ?? run.label,
      values: ids.map((id) => run.summary.perProblem.find((problem) => problem.id === id)?.avg ?? 0),
    })),
    yMax: 1,
    yLabel: 'accuracy',
    formatValue: (value) => `${Math.round(value * 100)}%`,
    width: 1040,
    height: 320,
  });
}

function codeCallsChart(runs: readonly ReportRun[], names: readonly string[]): string {
  const bins = histogram(
    runs.map((run) => run.trajectories.map((trajectory) => trajectory.toolCalls.length)),
  );
  return barChart({
    title: 'code calls per trajectory',
    categories: bins.labels,
    series: runs.map((run, index) => ({ name: names[index] ?? run.label, values: bins.counts[index] ?? [] })),
    yLabel: 'trajectories',
    width: 1040,
    height: 260,
  });
}

function lengthChart(runs: readonly ReportRun[], names: readonly string[]): string {
  const unit = lengthUnit(runs.flatMap((run) => run.trajectories));
  const bins = histogram(
    runs.map((run) => run.trajectories.map((trajectory) => responseLength(trajectory, unit))),
    { binCount: 16 },
  );
  return barChart({
    title: `response length (${unit}, bin start)`,
    categories: bins.labels,
    series: runs.map((run, index) => ({ name: names[index] ?? run.label, values: bins.counts[index] ?? [] })),
    yLabel: 'trajectories',
    width: 1040,
    height: 260,
  });
}

function finishReasonChart(runs: readonly ReportRun[], names: readonly string[]): string {
  const reasons = [...new Set(runs.flatMap((run) => Object.keys(run.summary.finishReasons)))].sort();
  return barChart({
    title: 'finish reasons',
    categories: reasons,
    series: runs.map((run, index) => ({
      name: names[index] ?? run.label,
      values: reasons.map((reason) => run.summary.finishReasons[reason] ?? 0),
    })),
    yLabel: 'trajectories',
    width: 1040,
    height: 240,
  });
}

function problemTable(runs: readonly ReportRun[]): string {
  const ids = problemIds(runs);
  const head = `<tr><th class="name">problem</th><th class="name">reference</th>${runs
    .map((run, index) =>
      `<th>${swatch(index)}correct</th><th>maj answer</th><th>code/traj</th>`.replace(
        'correct',
        `${escapeHtml(run.label)}: correct`,
      ),
    )
    .join('')}</tr>`;
  const body = ids
    .map((id) => {
      const first = runs.map((run) => run.summary.perProblem.find((problem) => problem.id === id));
      const reference = first.find((problem) => problem !== undefined)?.reference ?? '';
      const cells = first
        .map((problem) => {
          if (problem === undefined) return '<td>–</td><td>–</td><td>–</td>';
          const vote = problem.majority;
          return `<td class="${problem.correct > 0 ? 'ok' : 'bad'}">${problem.correct}/${problem.samples}</td><td class="${vote.correct ? 'ok' : 'bad'}">${escapeHtml(vote.answer ?? '–')}</td><td>${fixed(problem.codeCallsPerTrajectory)}</td>`;
        })
        .join('');
      return `<tr><td class="name">${escapeHtml(id)}</td><td class="name">${escapeHtml(reference)}</td>${cells}</tr>`;
    })
    .join('');
  return `<table>${head}${body}</table>`;
}

function configTable(runs: readonly ReportRun[]): string {
  const keys = [...new Set(runs.flatMap((run) => Object.keys(run.config ?? {})))].sort();
  if (keys.length === 0) return '<p class="sub">no config.json</p>';
  const show = (value: unknown) =>
    value === undefined ? '–' : typeof value === 'string' ? value : JSON.stringify(value);
  const head = `<tr><th class="name">key</th>${runs.map((run, index) => `<th class="name">${swatch(index)}${escapeHtml(run.label)}</th>`).join('')}</tr>`;
  const body = keys
    .map(
      (key) =>
        `<tr><td class="name">${escapeHtml(key)}</td>${runs.map((run) => `<td class="name">${escapeHtml(show(run.config?.[key]))}</td>`).join('')}</tr>`,
    )
    .join('');
  return `<table>${head}${body}</table>`;
}
