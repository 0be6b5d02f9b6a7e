/**
 * The RL report: one self-contained HTML page (inline CSS and SVG) with the curves of a `train
 * rl` run — accuracy (rollout at the sampling temperature, and held-out greedy), code
 * frequency, response length, reward, entropy and self-correction rate against the step — a
 * summary table (steps, wall time, tokens/s, first and last held-out figures) and the
 * configuration. Two or more runs share every chart (`agentmath report DIR --compare DIR2`).
 * Read from the run folder's records only: `metrics.jsonl`, `evals.jsonl`, `steps.jsonl`,
 * `config.json`.
 */
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { escapeHtml } from '../eval/escape-html.ts';
import { REPORT_STYLE } from '../eval/report-html.ts';
import { type LineSeries, lineChart } from '../eval/svg-line-chart.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import type { RlMetrics } from './rl-metrics.ts';
import { isMeasuredEval, RL_FILES, type RlEvalRecord } from './rl-records.ts';

/** One run as the report shows it. */
export type RlReportRun = {
  label: string;
  config: Record<string, unknown> | null;
  metrics: RlMetrics[];
  evals: RlEvalRecord[];
  /** Model tokens generated per step (from `steps.jsonl`), when recorded. */
  tokensByStep: Map<number, number>;
};

/**
 * Whether a folder holds a `train rl` run: its `metrics.jsonl`, whose first line (if any) is an
 * RL step (an `accuracy` field). `train sft --model` writes a `metrics.jsonl` too, of loss lines.
 */
export function isRlRunFolder(folder: string): boolean {
  const path = join(folder, RL_FILES.metrics);
  if (!existsSync(path)) return false;
  const first = firstLine(path);
  if (first === null) return true; // started, no step recorded yet
  try {
    return 'accuracy' in (JSON.parse(first) as object);
  } catch {
    return true; // a malformed line: the reader names it
  }
}

/** The first non-empty line of a file (read from its start only), or null. */
function firstLine(path: string): string | null {
  const handle = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(64 * 1024);
    const length = readSync(handle, buffer, 0, buffer.length, 0);
    const line = buffer
      .subarray(0, length)
      .toString('utf8')
      .split('\n')
      .find((text) => text.trim() !== '');
    return line ?? null;
  } finally {
    closeSync(handle);
  }
}

/** Reads a run folder's records; a malformed line is an error naming the file and line. */
export async function readRlRun(folder: string, label = basename(resolve(folder))): Promise<RlReportRun> {
  const metrics = await readJsonLines<RlMetrics>(join(folder, RL_FILES.metrics));
  const evals = existsSync(join(folder, RL_FILES.evals))
    ? await readJsonLines<RlEvalRecord>(join(folder, RL_FILES.evals))
    : [];
  const steps = existsSync(join(folder, 'steps.jsonl'))
    ? await readJsonLines<{ step: number; tokensGenerated?: number }>(join(folder, 'steps.jsonl'))
    : [];
  const configPath = join(folder, 'config.json');
  const config = existsSync(configPath)
    ? (JSON.parse(await readFile(configPath, 'utf8')) as Record<string, unknown>)
    : null;
  return {
    label,
    config,
    metrics,
    evals,
    tokensByStep: new Map(steps.map((line) => [line.step, line.tokensGenerated ?? 0])),
  };
}

/** The page for one run, or several side by side. */
export function renderRlReport(runs: readonly RlReportRun[]): string {
  const several = runs.length > 1;
  const title = several
    ? `RL runs: ${runs.map((run) => run.label).join(' vs ')}`
    : `RL run: ${runs[0]?.label}`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${REPORT_STYLE}</style></head><body>
<h1>${escapeHtml(title)}</h1>
${rlReportSections(runs)}
</body></html>
`;
}

/** The report's sections (summary, curves, held-out table, configuration), for any page. */
export function rlReportSections(runs: readonly RlReportRun[]): string {
  const several = runs.length > 1;
  const name = (run: RlReportRun, what: string) => (several ? `${run.label} ${what}` : what);
  const perStep = (pick: (metrics: RlMetrics) => number | null, what: string): LineSeries[] =>
    runs.map((run) => ({
      name: name(run, what),
      points: run.metrics.map((metrics) => ({ x: metrics.step + 1, y: pick(metrics) })),
    }));
  const perEval = (pick: (record: RlEvalRecord) => number | null, what: string): LineSeries[] =>
    runs.map((run) => ({
      name: name(run, what),
      points: run.evals.map((record) => ({ x: record.step, y: pick(record) })),
    }));
  const percentAxis = { yMin: 0, yMax: 1, formatValue: (value: number) => `${Math.round(value * 100)}%` };
  const charts = [
    lineChart({
      title: 'Accuracy',
      series: [
        ...perEval((record) => record.accuracy, 'held-out (greedy)'),
        ...perStep((metrics) => metrics.accuracy, 'rollout (sampled)'),
      ],
      xLabel: 'step',
      ...percentAxis,
    }),
    lineChart({
      title: 'Code frequency (share of trajectories with a code call)',
      series: [
        ...perEval((record) => (isMeasuredEval(record) ? record.codeFrequency : null), 'held-out'),
        ...perStep((metrics) => metrics.codeFrequency, 'rollout'),
      ],
      xLabel: 'step',
      ...percentAxis,
    }),
    lineChart({
      title: 'Response length (model tokens, rollout mean)',
      series: perStep((metrics) => metrics.responseTokensMean, 'tokens'),
      xLabel: 'step',
      formatValue: (value) => String(Math.round(value)),
    }),
    lineChart({
      title: 'Reward (rollout mean)',
      series: perStep((metrics) => metrics.rewardMean, 'reward'),
      xLabel: 'step',
    }),
    lineChart({
      title: 'Entropy (trained tokens, nats)',
      series: perStep((metrics) => metrics.entropy, 'entropy'),
      xLabel: 'step',
    }),
    lineChart({
      title: 'Self-correction rate (failed call followed by a successful one)',
      series: perStep((metrics) => metrics.selfCorrectionRate, 'rate'),
      xLabel: 'step',
      ...percentAxis,
    }),
  ];
  const title = several
    ? `RL runs: ${runs.map((run) => run.label).join(' vs ')}`
    : `RL run: ${runs[0]?.label}`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title><style>${REPORT_STYLE}</style></head><body>
<h1>${escapeHtml(title)}</h1>
<p class="sub">Step x on a curve: rollout figures of step x (trajectories of the policy before update x); held-out figures after x updates.</p>
<h2>Summary</h2>${summaryTable(runs)}
<h2>Curves</h2><div style="display:flex;flex-wrap:wrap;gap:8px">${charts.join('\n')}</div>
<h2>Held-out evaluations</h2>${evalTable(runs)}
<h2>Configuration</h2>${configTable(runs)}`;
}

/** Writes report.html for the runs (default into the first run's folder); returns its path. */
export async function writeRlReport(
  folders: readonly string[],
  options: { outFile?: string } = {},
): Promise<string> {
  if (folders.length === 0) throw new AgentMathError('RUN_NOT_FOUND', 'no run folder given');
  const runs = await Promise.all(folders.map((folder) => readRlRun(folder)));
  const path = options.outFile ?? join(folders[0] as string, 'report.html');
  await writeFile(path, renderRlReport(runs));
  return path;
}

function summaryTable(runs: readonly RlReportRun[]): string {
  const header =
    '<tr><th class="name">run</th><th>steps</th><th>held-out accuracy (first → last)</th><th>code frequency (first → last)</th><th>rollout accuracy, last step</th><th>wall time</th><th>rollout tokens/s</th></tr>';
  const rows = runs.map((run) => {
    const measured = run.evals.filter(isMeasuredEval);
    const first = measured[0];
    const last = measured.at(-1);
    const rolloutMs = run.metrics.reduce((sum, metrics) => sum + metrics.rolloutMs, 0);
    const wallMs = run.metrics.reduce((sum, metrics) => sum + metrics.rolloutMs + metrics.trainMs, 0);
    const tokens = [...run.tokensByStep.values()].reduce((sum, value) => sum + value, 0);
    return `<tr><td class="name">${escapeHtml(run.label)}</td><td>${run.metrics.length}</td><td>${arrow(first?.accuracy, last?.accuracy, first === last)}</td><td>${arrow(first?.codeFrequency, last?.codeFrequency, first === last)}</td><td>${percent(run.metrics.at(-1)?.accuracy)}</td><td>${(wallMs / 60_000).toFixed(1)} min</td><td>${rolloutMs > 0 && tokens > 0 ? Math.round(tokens / (rolloutMs / 1000)) : '–'}</td></tr>`;
  });
  return `<table>${header}${rows.join('')}</table>`;
}

function evalTable(runs: readonly RlReportRun[]): string {
  const header =
    '<tr><th class="name">run</th><th>after step</th><th>problems</th><th>accuracy</th><th>code frequency</th><th>code calls / trajectory</th><th>response tokens</th><th>by level</th></tr>';
  const rows = runs.flatMap((run) =>
    run.evals.map((record) =>
      !isMeasuredEval(record)
        ? `<tr><td class="name">${escapeHtml(run.label)}</td><td>${record.step}</td><td>–</td><td colspan="5" class="name">missing: ${escapeHtml(record.missing)}</td></tr>`
        : `<tr><td class="name">${escapeHtml(run.label)}</td><td>${record.step}</td><td>${record.problems}</td><td>${percent(record.accuracy)}</td><td>${percent(record.codeFrequency)}</td><td>${record.toolCallsPerTrajectory.toFixed(2)}</td><td>${record.responseTokensMean === null ? '–' : Math.round(record.responseTokensMean)}</td><td class="name">${record.byLevel
            .map((level) => `L${level.level} ${percent(level.accuracy)}`)
            .join(' · ')}</td></tr>`,
    ),
  );
  return rows.length === 0
    ? '<p>No held-out evaluation yet.</p>'
    : `<table>${header}${rows.join('')}</table>`;
}

function configTable(runs: readonly RlReportRun[]): string {
  const keys = [...new Set(runs.flatMap((run) => Object.keys(run.config ?? {})))].sort();
  if (keys.length === 0) return '<p>No config.json.</p>';
  const header = `<tr><th class="name">field</th>${runs.map((run) => `<th>${escapeHtml(run.label)}</th>`).join('')}</tr>`;
  const rows = keys.map((key) => {
    const values = runs.map((run) => JSON.stringify(run.config?.[key] ?? null));
    const differs = new Set(values).size > 1;
    return `<tr${differs ? ' class="bad"' : ''}><td class="name">${escapeHtml(key)}</td>${values
      .map((value) => `<td class="name">${escapeHtml(value)}</td>`)
      .join('')}</tr>`;
  });
  return `<table>${header}${rows.join('')}</table>`;
}

function percent(value: number | null | undefined): string {
  return value === null || value === undefined ? '–' : `${(100 * value).toFixed(1)}%`;
}

function arrow(first: number | undefined, last: number | undefined, same: boolean): string {
  if (first === undefined || last === undefined) return '–';
  return same ? percent(first) : `${percent(first)} → ${percent(last)}`;
}

async function readJsonLines<T>(path: string): Promise<T[]> {
  const text = await readFile(path, 'utf8');
  const values: T[] = [];
  const lines = text.split('\n');
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    try {
      values.push(JSON.parse(line) as T);
    } catch {
      // A torn last line (a kill mid-append) is what a resume truncates; skip it here too.
      if (index === lines.length - 1) continue;
      throw new AgentMathError('RUN_FORMAT', `${path}:${index + 1}: not a JSON line`);
    }
  }
  return values;
}
