/**
 * Where named benchmark files live. The project ships no benchmark data; it reads files by path
 * from a data folder: `--data-dir`, else `AGENTMATH_DATA_DIR`, else the first
 * `shared/data/benchmarks` found in the project folder's parent or an ancestor of it.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The benchmark data folder, or null when none is configured or found. */
export function resolveDataDir({
  dataDir,
  env = process.env,
  projectRoot = PROJECT_ROOT,
}: {
  dataDir?: string | undefined;
  env?: Record<string, string | undefined>;
  projectRoot?: string;
} = {}): string | null {
  if (dataDir !== undefined && dataDir !== '') return resolve(dataDir);
  const fromEnv = env.AGENTMATH_DATA_DIR;
  if (fromEnv !== undefined && fromEnv !== '') return resolve(fromEnv);
  // Walk up from the project's parent: `<repo>/../shared/...`, and worktrees nested deeper.
  let folder = dirname(projectRoot);
  for (;;) {
    const candidate = join(folder, 'shared', 'data', 'benchmarks');
    if (existsSync(candidate) && statSync(candidate).isDirectory()) return candidate;
    const parent = dirname(folder);
    if (parent === folder) return null;
    folder = parent;
  }
}
