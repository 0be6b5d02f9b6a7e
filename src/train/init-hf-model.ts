/**
 * `agentmath model init`: a random-init model of a real architecture (Qwen3, Qwen3-MoE, Llama)
 * in Hugging Face layout, with a byte-level BPE tokenizer whose merges are learned from the
 * arith task's problems and solutions and the agent's prompts, and a ChatML chat template.
 * For smoke tests, CI and trying the real path without weights; nothing is downloaded. The
 * Python side (`agentmath_train.init_model`) builds it with `transformers` and `tokenizers`.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { instructedPrompt } from '../agent/index.ts';
import { getDialect } from '../protocol/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';
import { arithToolPlan, arithTrainProblems, writeArithTextSolution } from '../tasks/index.ts';

const run = promisify(execFile);

export const MODEL_ARCHITECTURES = ['qwen3', 'qwen3-moe', 'llama'] as const;
export type ModelArchitecture = (typeof MODEL_ARCHITECTURES)[number];

export type InitHfModelOptions = {
  arch: ModelArchitecture;
  out: string;
  layers?: number;
  hidden?: number;
  vocabSize?: number;
  seed?: number;
  /** Attention heads, KV heads, MLP width (default hidden/16, half as many, 3 × hidden). */
  heads?: number;
  kvHeads?: number;
  intermediate?: number;
  /** Embedding and head rows when more than the tokenizer's vocabulary (padded, as real models). */
  embeddingRows?: number;
};

export type InitHfModelResult = {
  arch: string;
  out: string;
  parameters: number;
  vocabSize: number;
  layers: number;
  hidden: number;
};

/** The text the tokenizer's merges are learned from: what the model will read and write. */
export function tokenizerCorpus(problemCount = 400): string {
  const chunks: string[] = [];
  for (const dialectName of ['tags', 'markdown'] as const) {
    const dialect = getDialect(dialectName);
    for (const message of instructedPrompt({ id: 'corpus', text: '' }, dialect)) chunks.push(message.content);
  }
  for (const problem of arithTrainProblems({ count: problemCount, seed: 'tokenizer-corpus' })) {
    const text = writeArithTextSolution(problem);
    chunks.push(text.problem.problem, ...text.segments.map((segment) => segment.text));
    const plan = arithToolPlan(problem.spec);
    chunks.push(
      `<think>${plan.lead}\n<code>\n${plan.code}</code>\n<interpreter>\n`,
      `</interpreter>\n${plan.conclusion}`,
    );
  }
  return chunks.join('\n\n');
}

function shapeArguments(options: InitHfModelOptions): string[] {
  const given: [string, number | undefined][] = [
    ['--heads', options.heads],
    ['--kv-heads', options.kvHeads],
    ['--intermediate', options.intermediate],
    ['--embedding-rows', options.embeddingRows],
  ];
  return given.flatMap(([flag, value]) => (value === undefined ? [] : [flag, String(value)]));
}

export async function initHfModel(options: InitHfModelOptions): Promise<InitHfModelResult> {
  const { arch, layers = 2, hidden = 64, vocabSize = 1024, seed = 0 } = options;
  const out = resolve(options.out);
  const folder = await mkdtemp(join(tmpdir(), 'agentmath-model-init-'));
  try {
    const corpus = join(folder, 'corpus.txt');
    await writeFile(corpus, tokenizerCorpus());
    const { stdout } = await run(
      trainerPython(),
      [
        '-m',
        'agentmath_train',
        'init-model',
        '--arch',
        arch,
        '--out',
        out,
        '--corpus',
        corpus,
        '--layers',
        String(layers),
        '--hidden',
        String(hidden),
        '--vocab-size',
        String(vocabSize),
        '--seed',
        String(seed),
        ...shapeArguments(options),
      ],
      {
        env: { ...process.env, PYTHONPATH: join(PROJECT_ROOT, 'python'), HF_HUB_OFFLINE: '1' },
        timeout: 300_000,
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    const last = stdout.trim().split('\n').at(-1) ?? '';
    return JSON.parse(last) as InitHfModelResult;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new AgentMathError(
      'MODEL_INIT_FAILED',
      `model init --arch ${arch}: ${stderr ? stderr.split('\n').slice(-3).join(' ') : (error as Error).message}`,
      { cause: error },
    );
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
