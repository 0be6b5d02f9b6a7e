/**
 * Where the embedded models live in a project: `.agentmath/models/arith-tool` (trained on
 * tool-augmented solutions, the default policy) and `.agentmath/models/arith-text` (the
 * text-only baseline). Each is a model folder the worker can serve (`--model DIR`).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The two embedded model folders of a project, and the folder holding them. */
export type EmbeddedModelPaths = { models: string; tool: string; text: string };

/** Resolves the embedded model folders under `root` (default: the working directory). */
export function embeddedModelPaths(root: string = process.cwd()): EmbeddedModelPaths {
  const models = join(resolve(root), '.agentmath', 'models');
  return { models, tool: join(models, 'arith-tool'), text: join(models, 'arith-text') };
}

/** Whether `folder` is a servable model folder (it has a config.json). */
export function isModelFolder(folder: string): boolean {
  return existsSync(join(folder, 'config.json'));
}

/**
 * The marker `model import`/`model pull` write into a folder (src/model/import-gguf-model.ts):
 * a pretrained model there is served when asked for by `--model`, never picked as the default.
 */
const IMPORTED_MODEL_MARKER = 'agentmath-import.json';

/**
 * The default embedded model of a project: the tool model when it exists, else the first
 * other model folder under `.agentmath/models/` by name that is not an imported pretrained
 * model, else null.
 */
export function findEmbeddedModel(root: string = process.cwd()): string | null {
  const paths = embeddedModelPaths(root);
  if (isModelFolder(paths.tool)) return paths.tool;
  if (!existsSync(paths.models)) return null;
  const folders = readdirSync(paths.models, { withFileTypes: true })
    .filter(
      (entry) =>
        entry.isDirectory() &&
        isModelFolder(join(paths.models, entry.name)) &&
        !existsSync(join(paths.models, entry.name, IMPORTED_MODEL_MARKER)),
    )
    .map((entry) => join(paths.models, entry.name))
    .sort();
  return folders[0] ?? null;
}
