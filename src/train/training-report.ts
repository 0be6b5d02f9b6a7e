/**
 * The training report of an SFT run (`DIR/training-report.json` and `.md`): held-out accuracy
 * by level measured through the agent loop, steps, tokens, wall time, tokens/s, and the
 * machine's load while it ran (figures from a shared machine are noisy). `renderComparison`
 * puts the tool model and the text-only baseline side by side.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentMathError } from '../shared/agentmath-error.ts';
import type { HeldOutEvalResult, LevelAccuracy } from './held-out-eval.ts';
import type { ResolvedSftConfig } from './sft-config.ts';

export const TRAINING_REPORT_FILE = 'training-report.json';
export const TRAINING_REPORT_MARKDOWN = 'training-report.md';

/** One step of the loss curve (from `metrics.jsonl`). */
export type LossPoint = { step: number; loss: number | null; learningRate: number };

export type TrainingReport = {
  version: 2;
  createdAt: string;
  config: ResolvedSftConfig;
  /** The exported model, the folder it was trained from, its parameters. */
  model: { folder: string; from: string; parameters: number | null };
  data: { examples: number; droppedTooLong: number; meanTokens: number; wallMs: number };
  training: {
    steps: number;
    tokens: number;
    trainedTokens: number;
    wallMs: number;
    tokensPerSecond: number;
    finalLoss: number | null;
    history: LossPoint[];
  };
  /** Held-out accuracy through the agent loop; null when the run evaluated nothing (`evalProblems` 0). */
  eval: Omit<HeldOutEvalResult, 'samples'> | null;
  samples: HeldOutEvalResult['samples'];
  machine: { cpus: number; loadAverageStart: number; loadAverageEnd: number };
  /** Whole command: model, data, training, export, evaluation. */
  totalWallMs: number;
};

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;
const minutes = (ms: number): string => `${(ms / 60_000).toFixed(1)} min`;

/** A short markdown summary of one run. */
export function renderTrainingReport(report: TrainingReport): string {
  const { training, eval: evaluation, config } = report;
  const what = config.data ?? `arith ${config.style} solutions (levels ${config.levels.join(', ')})`;
  const lines = [
    `# SFT of ${report.model.from} on ${what} — ${report.createdAt}`,
    '',
    `${report.model.parameters ?? '?'} parameters, ${training.steps} steps × batch ${config.batchSize} at peak learning rate ` +
      `${config.learningRate}, ${training.tokens} tokens (${training.trainedTokens} trained) in ${minutes(training.wallMs)}: ` +
      `${Math.round(training.tokensPerSecond)} tokens/s, final loss ${training.finalLoss?.toFixed(4) ?? '—'}. Model: ${report.model.folder}.`,
    evaluation === null
      ? 'No held-out evaluation (evalProblems 0).'
      : `Held-out eval through the agent loop (greedy, real sandbox): ${evaluation.correct}/${evaluation.problems} ` +
        `(${percent(evaluation.accuracy)}) in ${(evaluation.wallMs / 1000).toFixed(1)} s; ` +
        `${evaluation.usedTools} trajectories ran code (${evaluation.toolCalls} calls).`,
    `Machine: ${report.machine.cpus} CPUs, load average ${report.machine.loadAverageStart.toFixed(1)} → ` +
      `${report.machine.loadAverageEnd.toFixed(1)}; whole command ${minutes(report.totalWallMs)}.`,
    '',
  ];
  if (evaluation !== null) {
    lines.push(
      '| level | problems | correct | accuracy |',
      '| --- | --- | --- | --- |',
      ...[...evaluation.byLevel, allOf(evaluation)].map(
        (row) => `| ${row.level} | ${row.problems} | ${row.correct} | ${percent(row.accuracy)} |`,
      ),
      '',
    );
  }
  return lines.join('\n');
}

function allOf(evaluation: Omit<HeldOutEvalResult, 'samples'>): LevelAccuracy {
  return {
    level: 'all',
    problems: evaluation.problems,
    correct: evaluation.correct,
    accuracy: evaluation.accuracy,
  };
}

/** Writes the JSON report and its markdown summary into the run folder. */
export async function writeTrainingReport(dir: string, report: TrainingReport): Promise<void> {
  await writeFile(join(dir, TRAINING_REPORT_FILE), `${JSON.stringify(report, null, 2)}\n`);
  await writeFile(join(dir, TRAINING_REPORT_MARKDOWN), renderTrainingReport(report));
}

/** A run folder without a readable report. */
export class TrainingReportMissingError extends AgentMathError {
  constructor(file: string, detail: string, options?: { cause?: unknown }) {
    super('TRAINING_REPORT_MISSING', `${file}: ${detail}`, options);
  }
}

/** Reads `DIR/training-report.json`. */
export async function readTrainingReport(dir: string): Promise<TrainingReport> {
  const file = join(dir, TRAINING_REPORT_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new TrainingReportMissingError(file, 'no training report (run `agentmath train sft` first)', {
      cause: error,
    });
  }
  const body = JSON.parse(text) as Partial<TrainingReport>;
  if (body.version !== 2 || body.eval === undefined || body.training === undefined) {
    throw new TrainingReportMissingError(
      file,
      'not a training report of this version (a run of an older AgentMath: train it again)',
    );
  }
  return body as TrainingReport;
}

/** Side-by-side accuracy by level of the tool model and the text-only baseline. */
export function renderComparison(tool: TrainingReport, text: TrainingReport): string {
  const levels = [
    ...new Set(
      [...(tool.eval?.byLevel ?? []), ...(text.eval?.byLevel ?? [])].map((row) => row.level as number),
    ),
  ].sort((a, b) => a - b);
  const cell = (report: TrainingReport, level: number | 'all'): string => {
    if (report.eval === null) return '—';
    const row =
      level === 'all' ? allOf(report.eval) : report.eval.byLevel.find((entry) => entry.level === level);
    return row === undefined ? '—' : `${percent(row.accuracy)} (${row.correct}/${row.problems})`;
  };
  const facts = (report: TrainingReport): string =>
    `${report.training.steps} steps, ${minutes(report.training.wallMs)}, ${Math.round(report.training.tokensPerSecond)} tokens/s`;
  return [
    '| level | tool model | text-only baseline |',
    '| --- | --- | --- |',
    ...[...levels, 'all' as const].map(
      (level) => `| ${level} | ${cell(tool, level)} | ${cell(text, level)} |`,
    ),
    `| training | ${facts(tool)} | ${facts(text)} |`,
    '',
  ].join('\n');
}
