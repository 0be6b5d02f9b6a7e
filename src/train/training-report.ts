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
import type { SftConfig } from './sft-config.ts';
import type { LossPoint } from './sft-state.ts';

export const TRAINING_REPORT_FILE = 'training-report.json';
export const TRAINING_REPORT_MARKDOWN = 'training-report.md';

export type TrainingReport = {
  version: 1;
  task: 'arith';
  style: 'tool' | 'text';
  createdAt: string;
  config: SftConfig;
  model: { preset: string; parameters: number | null; shape: Record<string, unknown> };
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
  eval: Omit<HeldOutEvalResult, 'samples'>;
  samples: HeldOutEvalResult['samples'];
  machine: { cpus: number; loadAverageStart: number; loadAverageEnd: number };
  /** Whole command: data, training, saving, evaluation. */
  totalWallMs: number;
};

const percent = (value: number): string => `${(100 * value).toFixed(1)}%`;
const minutes = (ms: number): string => `${(ms / 60_000).toFixed(1)} min`;

/** A short markdown summary of one run. */
export function renderTrainingReport(report: TrainingReport): string {
  const { training, eval: evaluation } = report;
  const rows = [...evaluation.byLevel, allOf(evaluation)].map(
    (row) => `| ${row.level} | ${row.problems} | ${row.correct} | ${percent(row.accuracy)} |`,
  );
  return [
    `# SFT ${report.task} (${report.style}) — ${report.createdAt}`,
    '',
    `Model \`${report.model.preset}\` (${report.model.parameters ?? '?'} parameters), ${training.steps} steps × batch ${report.config.batchSize}, ` +
      `${training.tokens} tokens (${training.trainedTokens} trained) in ${minutes(training.wallMs)}: ` +
      `${Math.round(training.tokensPerSecond)} tokens/s, final loss ${training.finalLoss?.toFixed(4) ?? '—'}.`,
    `Held-out eval through the agent loop (greedy, real sandbox): ${evaluation.correct}/${evaluation.problems} ` +
      `(${percent(evaluation.accuracy)}) in ${(evaluation.wallMs / 1000).toFixed(1)} s; ` +
      `${evaluation.usedTools} trajectories ran code (${evaluation.toolCalls} calls).`,
    `Machine: ${report.machine.cpus} CPUs, load average ${report.machine.loadAverageStart.toFixed(1)} → ` +
      `${report.machine.loadAverageEnd.toFixed(1)}; whole command ${minutes(report.totalWallMs)}.`,
    '',
    '| level | problems | correct | accuracy |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}

function allOf(evaluation: TrainingReport['eval']): LevelAccuracy {
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
  if (body.version !== 1 || body.eval === undefined || body.training === undefined) {
    throw new TrainingReportMissingError(file, 'not a training report of this version');
  }
  return body as TrainingReport;
}

/** Side-by-side accuracy by level of the tool model and the text-only baseline. */
export function renderComparison(tool: TrainingReport, text: TrainingReport): string {
  const levels = [
    ...new Set([...tool.eval.byLevel, ...text.eval.byLevel].map((row) => row.level as number)),
  ].sort((a, b) => a - b);
  const cell = (report: TrainingReport, level: number | 'all'): string => {
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
