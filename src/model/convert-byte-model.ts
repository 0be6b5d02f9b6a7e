/**
 * `agentmath model convert OLD --out NEW`: a byte model folder written by an older AgentMath
 * (the worker's own layout: `pytorch_model.bin` under its module names) rewritten once in the
 * Hugging Face layout every other model has (`model.safetensors`, the `agentmath-byte-gpt`
 * config), so the engine serves it and the trainer trains it. `OLD` is only read; `NEW` is
 * written whole or not at all (a temporary folder beside it, renamed into place) and must be
 * new or empty. The Python side is `agentmath_models.byte_folder.convert_legacy_folder`.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { HUB_OFFLINE_ENVIRONMENT, PROJECT_ROOT, trainerPython } from '../shared/python-environments.ts';
import { RUN_FOLDER_REFUSED } from '../shared/run-folder-check.ts';

const run = promisify(execFile);

export type ConvertByteModelResult = { from: string; out: string; parameters: number };

/** Converts `from` into `out`; a refusal (not an old byte model, `out` not new or empty) names the fix. */
export async function convertByteModel(options: {
  from: string;
  out: string;
}): Promise<ConvertByteModelResult> {
  const from = resolve(options.from);
  const out = resolve(options.out);
  if (existsSync(out) && (!statSync(out).isDirectory() || readdirSync(out).length > 0)) {
    throw new AgentMathError(
      RUN_FOLDER_REFUSED,
      `--out ${out}: exists and is not an empty folder; give a new one`,
    );
  }
  await mkdir(dirname(out), { recursive: true });
  const staging = await mkdtemp(join(dirname(out), `.${basename(out)}.convert-`));
  try {
    const { stdout } = await run(
      trainerPython(),
      ['-m', 'agentmath_train', 'convert-byte-model', '--from', from, '--out', staging],
      {
        env: { ...process.env, PYTHONPATH: join(PROJECT_ROOT, 'python'), ...HUB_OFFLINE_ENVIRONMENT },
        timeout: 300_000,
      },
    );
    const result = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as ConvertByteModelResult;
    await rm(out, { recursive: true, force: true });
    await rename(staging, out);
    return { ...result, from, out };
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    const refusal = stderr
      ?.split('\n')
      .find((line) => line.startsWith('agentmath_train convert-byte-model: '));
    if (refusal !== undefined) {
      throw new AgentMathError(
        'MODEL_CONVERT_REFUSED',
        refusal.slice('agentmath_train convert-byte-model: '.length),
        {
          cause: error,
        },
      );
    }
    throw new AgentMathError(
      'MODEL_CONVERT_FAILED',
      `model convert ${from}: ${stderr || (error as Error).message}`,
      {
        cause: error,
      },
    );
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
