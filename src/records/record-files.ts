/**
 * The catalogue of record files: every file a run folder holds that other tools read, with the
 * schema of the code that writes it. docs/records.md is rendered from it
 * (`records-reference.ts`), and `documented-fields.json` lists the fields it has promised.
 */
import { evalCommandConfigSchema, evalTrajectoryRecordSchema, runSummarySchema } from '../eval/index.ts';
import { arithEvaluationConfigSchema } from '../quickstart/arith-evaluation-config.ts';
import { quickstartRecordSchema } from '../quickstart/quickstart-record.ts';
import {
  groupRecordSchema,
  problemHistoryLineSchema,
  rolloutRunConfigSchema,
  rolloutTrajectoryRecordSchema,
  stepStatsSchema,
} from '../rollout/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { heldOutEvalConfigSchema } from '../train/held-out-eval-config.ts';
import {
  rlEvalsLineSchema,
  rlMetricsSchema,
  rlRunConfigSchema,
  rlWeightSyncSchema,
  sftMetricsSchema,
  sftRunConfigSchema,
} from '../train/index.ts';
import type { RecordFile } from './record-file.ts';

const ROLLOUT_COMMANDS = ['agentmath rollout', 'agentmath train rl'] as const;
const EVALUATIONS = [
  'agentmath eval',
  'agentmath train rl (each held-out evaluation)',
  'agentmath quickstart (each evaluation)',
] as const;

export const RECORD_FILES: readonly RecordFile[] = [
  {
    id: 'sft/config.json',
    path: 'DIR/config.json',
    format: 'json',
    writtenBy: ['agentmath train sft', 'agentmath quickstart (each SFT arm)'],
    summary:
      'The resolved configuration, written once before the data stage; `--resume` refuses a command line that differs in any of it but `steps`, `maxMinutes`, `threads`, `sequenceParallel` and `cpuOffload`, which a resume may change.',
    schema: sftRunConfigSchema,
  },
  {
    id: 'sft/metrics.jsonl',
    path: 'DIR/metrics.jsonl',
    format: 'jsonl',
    writtenBy: ['agentmath train sft', 'agentmath quickstart (each SFT arm)'],
    summary:
      'One line per optimizer step, appended as the step ends; a resume drops the lines of steps after its checkpoint (they are redone).',
    schema: sftMetricsSchema,
  },
  {
    id: 'rl/config.json',
    path: 'DIR/config.json',
    format: 'json',
    writtenBy: ['agentmath train rl'],
    summary:
      'What defines the run (the resolved `train rl` configuration without where things run, memory settings, steps and checkpoint cadence), written at the first start; `--resume` refuses a command line that differs in any of it.',
    schema: rlRunConfigSchema,
    fieldsDescribedIn:
      'docs/rl.md and `src/train/rl-config.ts` (most fields are the `train rl` flag of that name in kebab case: `groupSize` is `--group-size`)',
  },
  {
    id: 'rl/metrics.jsonl',
    path: 'DIR/metrics.jsonl',
    format: 'jsonl',
    writtenBy: ['agentmath train rl'],
    summary:
      'One line per step, appended when the step is trained and its weights synced; the report and `--logger` read it.',
    schema: rlMetricsSchema,
  },
  {
    id: 'rl/evals.jsonl',
    path: 'DIR/evals.jsonl',
    format: 'jsonl',
    writtenBy: ['agentmath train rl'],
    summary:
      'One line per held-out evaluation (every `--eval-every` steps and after the last); an evaluation that could not run is a line with `missing` and null figures.',
    schema: rlEvalsLineSchema,
  },
  {
    id: 'rl/syncs.jsonl',
    path: 'DIR/syncs.jsonl',
    format: 'jsonl',
    writtenBy: ['agentmath train rl'],
    summary:
      'One line per weight sync to the engines: at the start (the committed weights), then after each step that changed them.',
    schema: rlWeightSyncSchema,
  },
  {
    id: 'rollout/config.json',
    path: 'DIR/config.json',
    format: 'json',
    writtenBy: ['agentmath rollout'],
    summary:
      'What defines the run, written at the first start; `--resume` refuses a command line that differs in any of it.',
    schema: rolloutRunConfigSchema,
    fieldsDescribedIn: 'docs/rollout.md (the fields of `rollout`, the resolved rollout configuration)',
  },
  {
    id: 'rollout/trajectories.jsonl',
    path: 'DIR/trajectories.jsonl',
    format: 'jsonl',
    writtenBy: ROLLOUT_COMMANDS,
    summary: 'A trajectory each time it finishes or parks; the last line of an id is its current record.',
    schema: rolloutTrajectoryRecordSchema,
    fieldsDescribedIn: 'docs/trajectory.md (the Trajectory record)',
  },
  {
    id: 'rollout/groups.jsonl',
    path: 'DIR/groups.jsonl',
    format: 'jsonl',
    writtenBy: ROLLOUT_COMMANDS,
    summary: 'One line per decided group, kept or dropped.',
    schema: groupRecordSchema,
  },
  {
    id: 'rollout/steps.jsonl',
    path: 'DIR/steps.jsonl',
    format: 'jsonl',
    writtenBy: ROLLOUT_COMMANDS,
    summary: 'One line per rollout step.',
    schema: stepStatsSchema,
  },
  {
    id: 'rollout/problem-history.jsonl',
    path: 'DIR/problem-history.jsonl',
    format: 'jsonl',
    writtenBy: ['agentmath train rl'],
    summary:
      'A `group` line per decided group and, with `--skip-history`, a `skip` line per problem skipped before generation; a resume rebuilds the history from it.',
    schema: problemHistoryLineSchema,
  },
  {
    id: 'eval/config.json',
    path: 'DIR/config.json',
    format: 'json',
    writtenBy: ['agentmath eval'],
    summary: 'The configuration, rewritten at every start; `identity` is what a `--resume` must match.',
    schema: evalCommandConfigSchema,
  },
  {
    id: 'eval/trajectories.jsonl',
    path: 'DIR/trajectories.jsonl',
    format: 'jsonl',
    writtenBy: EVALUATIONS,
    summary:
      'One graded trajectory per line, appended as each finishes (a re-grade after an outage is appended too).',
    schema: evalTrajectoryRecordSchema,
    fieldsDescribedIn: 'docs/trajectory.md (the Trajectory record)',
  },
  {
    id: 'eval/summary.json',
    path: 'DIR/summary.json',
    format: 'json',
    writtenBy: EVALUATIONS,
    summary: "The run's figures, rewritten when a session ends.",
    schema: runSummarySchema,
  },
  {
    id: 'held-out-eval/config.json',
    path: 'DIR/eval-runs/step-NNNNN/config.json',
    format: 'json',
    writtenBy: ['agentmath train rl'],
    summary:
      'A held-out evaluation of `train rl`: the engine that served the policy, budgets, sampling, dialect.',
    schema: heldOutEvalConfigSchema,
  },
  {
    id: 'quickstart-eval/config.json',
    path: 'DIR/eval/{baseline,sft,rl}/config.json',
    format: 'json',
    writtenBy: ['agentmath quickstart --model', 'agentmath quickstart'],
    summary: "A quickstart's evaluation of one model: the model, prompt, dialect and agent settings.",
    schema: arithEvaluationConfigSchema,
  },
  {
    id: 'quickstart/quickstart.json',
    path: 'DIR/quickstart.json',
    format: 'json',
    writtenBy: ['agentmath quickstart --model'],
    summary:
      "The quickstart's result, written at the end: each model's figures, each stage's effect and time, the settings.",
    schema: quickstartRecordSchema,
  },
];

/** The catalogue entry of `id`; throws on an unknown id (a test names one that does not exist). */
export function recordFile(id: string): RecordFile {
  const found = RECORD_FILES.find((file) => file.id === id);
  if (found === undefined) {
    throw new AgentMathError(
      'RECORD_FILE_UNKNOWN',
      `no record file ${JSON.stringify(id)} (known: ${RECORD_FILES.map((file) => file.id).join(', ')})`,
    );
  }
  return found;
}
