/**
 * `agentmath model init`: a random-init model in Hugging Face layout. Qwen3, Qwen3-MoE and
 * Llama get a byte-level BPE tokenizer whose merges are learned from the arith task's problems
 * and solutions and the agent's prompts, and a ChatML chat template (for smoke tests, CI and
 * trying the real path without weights; nothing is downloaded); `byte-gpt` is the embedded
 * byte model (`agentmath_models.byte_gpt`, registered with transformers), its shape `tiny` by
 * default, its tokenizer the 256 bytes. The Python side (`agentmath_models`) builds them with
 * `transformers` and `tokenizers`.
 *
 * The folder is written whole or not at all: into a fresh temporary folder of our own beside
 * `--out` (`.NAME.model-init-XXXXXX`, made by mkdtemp, so it never is a folder of the user's),
 * then renamed into place. `--out` may be missing, empty, or a model this command wrote (its
 * `model-init.json`), which is replaced; anything else (a file, a folder of other files) is
 * refused with code `RUN_FOLDER_REFUSED` before anything is written, unless `force`.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { instructedPrompt } from '../agent/index.ts';
import { getDialect } from '../protocol/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { RUN_FOLDER_REFUSED } from '../shared/run-folder-check.ts';
import { arithToolPlan, arithTrainProblems, writeArithTextSolution } from '../tasks/index.ts';
import { runTrainerModule } from './trainer-module-run.ts';
import { writeTrainingPrompt } from './training-prompt.ts';

export const MODEL_ARCHITECTURES = ['qwen3', 'qwen3-moe', 'llama', 'byte-gpt'] as const;
export type ModelArchitecture = (typeof MODEL_ARCHITECTURES)[number];

/** The byte model's named shapes (`agentmath_models.byte_gpt.BYTE_GPT_SHAPES`). */
export const BYTE_GPT_SHAPES = ['tiny', 'test'] as const;
export type ByteGptShape = (typeof BYTE_GPT_SHAPES)[number];

export type InitHfModelOptions = {
  arch: ModelArchitecture;
  out: string;
  /** byte-gpt: the named shape the other shape options change (default tiny). */
  shape?: ByteGptShape;
  /** Default 2 and 64 (byte-gpt: its shape's). */
  layers?: number;
  hidden?: number;
  vocabSize?: number;
  seed?: number;
  /** Replace `out` even when it holds files this command did not write. */
  force?: boolean;
  /** Attention heads, KV heads, MLP width (default hidden/16, half as many, 3 × hidden). */
  heads?: number;
  kvHeads?: number;
  intermediate?: number;
  /** Embedding and head rows when more than the tokenizer's vocabulary (padded, as real models). */
  embeddingRows?: number;
  /** Aborting it stops the Python side and removes the half-written folder (`ModelCommandStopped`). */
  signal?: AbortSignal;
};

/** The file that marks a folder as written by `model init` (so a second init may replace it). */
export const MODEL_INIT_MARKER = 'model-init.json';

/** Whether `model init` wrote the folder: a random-init model, trained from scratch. */
export function isModelInitFolder(folder: string): boolean {
  return existsSync(join(folder, MODEL_INIT_MARKER));
}

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

/**
 * Refuses an `--out` that `initHfModel` must not replace: a file (or a link to one), or a
 * folder holding files that are not a model this command wrote (unless `force`).
 */
export function checkModelInitOut(out: string, force = false): void {
  const refuse = (message: string) => new AgentMathError(RUN_FOLDER_REFUSED, message);
  if (!existsSync(out)) {
    const parent = existingAncestor(out);
    if (!statSync(parent).isDirectory())
      throw refuse(`--out ${out}: ${parent} is a file; give a folder for the model (a new or empty one)`);
    return;
  }
  if (!statSync(out).isDirectory())
    throw refuse(`--out ${out} is a file; give a folder for the model (a new or empty one)`);
  const entries = readdirSync(out);
  if (entries.length === 0 || entries.includes(MODEL_INIT_MARKER) || force) return;
  const shown = entries.sort().slice(0, 3).join(', ');
  throw refuse(
    `--out ${out} holds files that \`agentmath model init\` did not write (${shown}${entries.length > 3 ? ', …' : ''}; no ${MODEL_INIT_MARKER}): ` +
      'nothing was changed; pass a new or empty folder, or --force to replace the folder and everything in it',
  );
}

/** The nearest part of `path` (itself or a parent) that exists. */
function existingAncestor(path: string): string {
  let current = path;
  while (!existsSync(current) && dirname(current) !== current) current = dirname(current);
  return current;
}

function shapeArguments(options: InitHfModelOptions): string[] {
  const given: [string, number | undefined][] = [
    ['--layers', options.layers],
    ['--hidden', options.hidden],
    ['--heads', options.heads],
    ['--kv-heads', options.kvHeads],
    ['--intermediate', options.intermediate],
    ['--embedding-rows', options.embeddingRows],
  ];
  return given.flatMap(([flag, value]) => (value === undefined ? [] : [flag, String(value)]));
}

export async function initHfModel(options: InitHfModelOptions): Promise<InitHfModelResult> {
  const { arch, vocabSize = 1024, seed = 0, force = false } = options;
  const byteModel = arch === 'byte-gpt';
  const out = resolve(options.out);
  checkModelInitOut(out, force);
  await mkdir(dirname(out), { recursive: true });
  // Beside the target (same file system, so the rename is atomic), under a name mkdtemp made.
  const staging = await mkdtemp(join(dirname(out), `.${basename(out)}.model-init-`));
  const folder = await mkdtemp(join(tmpdir(), 'agentmath-model-init-')).catch(async (error: unknown) => {
    await rm(staging, { recursive: true, force: true });
    throw error;
  });
  try {
    // The byte model's tokens are bytes; the others learn their merges from the corpus.
    const corpus = join(folder, 'corpus.txt');
    if (!byteModel) await writeFile(corpus, tokenizerCorpus());
    const outcome = await runTrainerModule({
      command: 'model init',
      args: [
        'init-model',
        '--arch',
        arch,
        '--out',
        staging,
        ...(byteModel
          ? ['--shape', options.shape ?? 'tiny']
          : ['--corpus', corpus, '--vocab-size', String(vocabSize)]),
        '--seed',
        String(seed),
        ...shapeArguments(options),
      ],
      ...(options.signal ? { signal: options.signal } : {}),
      timeoutMs: 300_000,
    });
    if (outcome.code !== 0) {
      const stderr = outcome.stderr.trim();
      throw new AgentMathError(
        'MODEL_INIT_FAILED',
        `model init --arch ${arch}: ${stderr ? stderr.split('\n').slice(-3).join(' ') : `exited with ${outcome.code ?? outcome.signal}`}`,
      );
    }
    const last = outcome.stdout.trim().split('\n').at(-1) ?? '';
    const result = { ...(JSON.parse(last) as InitHfModelResult), out };
    // The byte model is prompted with the problem alone in the tags dialect (it learns no
    // instructions): declared, so every command prompts it so by default.
    if (byteModel) await writeTrainingPrompt(staging, { prompt: 'problem-only', dialect: 'tags' });
    await writeFile(
      join(staging, MODEL_INIT_MARKER),
      `${JSON.stringify({ command: 'agentmath model init', arch, layers: result.layers, hidden: result.hidden, vocabSize: result.vocabSize, seed }, null, 2)}\n`,
    );
    checkModelInitOut(out, force); // unchanged meanwhile
    await rm(out, { recursive: true, force: true });
    await rename(staging, out);
    return result;
  } catch (error) {
    if (error instanceof AgentMathError) throw error;
    throw new AgentMathError('MODEL_INIT_FAILED', `model init --arch ${arch}: ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    await rm(folder, { recursive: true, force: true });
    await rm(staging, { recursive: true, force: true });
  }
}
