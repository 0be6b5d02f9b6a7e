/**
 * The SmolLM2-135M-Instruct folder for tests: the pulled cache `.agentmath/models/smollm2-135m-instruct`
 * of the project when setup made it, else one import of the locked wheel's GGUF into a
 * temporary folder (removed by `release`), else null (the wheel is not installed: tests skip).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  importGgufModel,
  isImportedModelFolder,
  locateWheelFile,
  PULLABLE_MODELS,
  pulledModelFolder,
} from '../src/model/index.ts';
import { PROJECT_ROOT } from '../src/shared/python-environments.ts';

export const SMOLLM2_CACHE = pulledModelFolder('smollm2-135m-instruct', PROJECT_ROOT);

/** Whether a test can have the folder (the cache exists or the wheel is installed). */
export async function smollm2Available(): Promise<boolean> {
  return (
    isImportedModelFolder(SMOLLM2_CACHE) ||
    (await locateWheelFile(PULLABLE_MODELS['smollm2-135m-instruct'])) !== null
  );
}

export async function smollm2Folder(): Promise<{ folder: string; release: () => Promise<void> } | null> {
  if (isImportedModelFolder(SMOLLM2_CACHE)) return { folder: SMOLLM2_CACHE, release: async () => {} };
  const gguf = await locateWheelFile(PULLABLE_MODELS['smollm2-135m-instruct']);
  if (gguf === null) return null;
  const temporary = await mkdtemp(join(tmpdir(), 'agentmath-smollm2-'));
  const folder = join(temporary, 'smollm2-135m-instruct');
  await importGgufModel({ gguf, out: folder });
  return { folder, release: () => rm(temporary, { recursive: true, force: true }) };
}
