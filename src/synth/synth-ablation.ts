/**
 * `agentmath synth ablation`: the paper's refinement ablation at small scale, offline. Arith
 * training problems with their text solutions are synthesised by the arith teacher (noisy,
 * served over HTTP) through the real pipeline, once per row with more stages on; the
 * embedded model is trained from scratch on each row's `trajectories.jsonl` and evaluated on
 * held-out arith through the agent loop. Rows: unrefined (decontamination only) → + format →
 * + executability → + feedback alignment (with rationality and the answer check) →
 * + self-correction → + masking (the same data with interpreter output masked; every earlier
 * row trains on it). Resumable: a row whose training report exists is read, not redone.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import type { SandboxProvider } from '../sandbox/types.ts';
import { arithTrainProblems } from '../tasks/arith/arith-problems.ts';
import { writeArithTextSolution } from '../tasks/arith/arith-text-solution.ts';
import { resolveSftConfig } from '../train/sft-config.ts';
import { runSft, type SftEvent } from '../train/sft-run.ts';
import type { TrainingReport } from '../train/training-report.ts';
import { type ArithNoise, DEFAULT_ARITH_NOISE, startArithTeacherServer } from './arith-teacher.ts';
import { OpenAiTeacher } from './openai-teacher.ts';
import { SYNTH_STAGES, type SynthStage } from './synth-record.ts';
import { runSynth, type SynthEvent } from './synth-run.ts';

/** The paper's AIME24 figures for the same rows (AgentMath ablation). */
export const PAPER_ABLATION = [35.3, 47.4, 52.8, 56.3, 58.6, 60.5] as const;

export const ABLATION_ROWS: { name: string; stages: SynthStage[]; masked: boolean }[] = [
  { name: 'unrefined', stages: ['decontaminate'], masked: false },
  { name: '+ format', stages: ['decontaminate', 'format'], masked: false },
  { name: '+ executability', stages: ['decontaminate', 'format', 'executability'], masked: false },
  {
    name: '+ feedback alignment',
    stages: ['decontaminate', 'format', 'executability', 'alignment', 'rationality', 'answer'],
    masked: false,
  },
  {
    name: '+ self-correction',
    stages: [...SYNTH_STAGES],
    masked: false,
  },
  {
    name: '+ masking',
    stages: [...SYNTH_STAGES],
    masked: true,
  },
];

export type AblationOptions = {
  out: string;
  problems: number;
  steps: number;
  evalProblems: number;
  seed: number;
  threads: number;
  dataDir: string | null;
  sandbox: SandboxProvider;
  noise?: ArithNoise;
  onLine?: (line: string) => void;
  onSftEvent?: (event: SftEvent) => void;
  onSynthEvent?: (event: SynthEvent) => void;
};

export type AblationRow = {
  name: string;
  examples: number;
  accuracy: number;
  correct: number;
  problems: number;
  paper: number;
};

async function readReport(dir: string): Promise<TrainingReport | null> {
  try {
    return JSON.parse(await readFile(join(dir, 'training-report.json'), 'utf8')) as TrainingReport;
  } catch {
    return null;
  }
}

/** The table, ours beside the paper's. */
export function renderAblationTable(rows: readonly AblationRow[], note: string): string {
  const lines = [
    '| row | training samples | held-out arith accuracy (ours) | AIME24 (paper) |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map(
      (row) =>
        `| ${row.name} | ${row.examples} | ${(row.accuracy * 100).toFixed(1)}% (${row.correct}/${row.problems}) | ${row.paper.toFixed(1)} |`,
    ),
  ];
  return `${lines.join('\n')}\n\n${note}\n`;
}

/** Runs (or resumes) the ablation and returns its rows. */
export async function runAblation(options: AblationOptions): Promise<AblationRow[]> {
  const out = resolve(options.out);
  const log = options.onLine ?? (() => {});
  await mkdir(out, { recursive: true });
  const problems = arithTrainProblems({ count: options.problems, seed: options.seed });
  const input = join(out, 'input.jsonl');
  await writeFile(
    input,
    problems
      .map((problem) =>
        JSON.stringify({
          id: problem.id,
          problem: problem.problem,
          solution: writeArithTextSolution(problem).segments[0]!.text,
          answer: problem.answer,
        }),
      )
      .join('\n') + '\n',
  );
  const server = await startArithTeacherServer({ problems, noise: options.noise ?? DEFAULT_ARITH_NOISE });
  const rows: AblationRow[] = [];
  const loadStart = loadavg()[0] ?? 0;
  try {
    for (const [index, row] of ABLATION_ROWS.entries()) {
      const synthDir = join(out, `data-${Math.min(index, 4)}`);
      if (index < 5) {
        const teacher = new OpenAiTeacher({
          baseUrl: server.url,
          model: 'arith-teacher',
          maxRetries: 2,
          baseDelayMs: 100,
        });
        const existing = await readFile(join(synthDir, 'stats.json'), 'utf8').catch(() => null);
        if (existing === null) {
          log(`[${row.name}] synthesising with stages ${row.stages.join(',')}`);
          await runSynth({
            dir: synthDir,
            config: {
              input,
              teacher: server.url,
              model: 'arith-teacher',
              fields: { id: 'id', problem: 'problem', solution: 'solution', answer: 'answer' },
              stages: row.stages,
              dataDir: options.dataDir,
              concurrency: 4,
            },
            // A new folder starts a run; one cut short before stats.json continues it.
            resume: existsSync(join(synthDir, 'synth-run.json')),
            teacher,
            sandbox: options.sandbox,
            ...(options.onSynthEvent ? { onEvent: options.onSynthEvent } : {}),
          });
        }
      }
      const modelDir = join(out, `model-${index}`);
      let report = await readReport(modelDir);
      if (report === null) {
        log(`[${row.name}] training ${options.steps} steps`);
        const trained = await runSft({
          out: modelDir,
          resume: existsSync(join(modelDir, 'config.json')),
          config: resolveSftConfig({
            data: join(synthDir, 'trajectories.jsonl'),
            maskToolOutput: row.masked,
            steps: options.steps,
            seed: options.seed,
            threads: options.threads,
            evalProblems: options.evalProblems,
          }),
          ...(options.onSftEvent ? { onEvent: options.onSftEvent } : {}),
        });
        if (trained.status === 'stopped')
          throw new Error(`${modelDir}: training stopped at step ${trained.step}`);
        report = trained.report;
      }
      if (report.eval === null) throw new Error(`${modelDir}: the run evaluated nothing (evalProblems 0)`);
      const stats = JSON.parse(await readFile(join(synthDir, 'stats.json'), 'utf8')) as { kept: number };
      rows.push({
        name: row.name,
        examples: stats.kept,
        accuracy: report.eval.accuracy,
        correct: report.eval.correct,
        problems: report.eval.problems,
        paper: PAPER_ABLATION[index]!,
      });
      log(`[${row.name}] ${(report.eval.accuracy * 100).toFixed(1)}%`);
    }
  } finally {
    await server.close();
  }
  const note = `Load average (1 min) at the start: ${loadStart.toFixed(2)}, at the end: ${(loadavg()[0] ?? 0).toFixed(2)}; the machine was shared with other jobs.`;
  await writeFile(join(out, 'ablation.json'), `${JSON.stringify({ rows, note }, null, 2)}\n`);
  await writeFile(join(out, 'ablation.md'), renderAblationTable(rows, note));
  return rows;
}
