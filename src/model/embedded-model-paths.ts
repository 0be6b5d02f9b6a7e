/**
 * Where the embedded models live in a project: `.agentmath/models/arith-tool` (the SFT run on
 * tool-augmented solutions, whose `model/` is the default policy) and `.agentmath/models/arith-text`
 * (the text-only baseline's run). A run's `model/` is a folder the engine serves (`--model DIR`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The two embedded SFT run folders of a project, and the folder holding them. */
export type EmbeddedModelPaths = { models: string; tool: string; text: string };

/** Resolves the embedded model folders under `root` (default: the working directory). */
export function embeddedModelPaths(root: string = process.cwd()): EmbeddedModelPaths {
  const models = join(resolve(root), '.agentmath', 'models');
  return { models, tool: join(models, 'arith-tool'), text: join(models, 'arith-text') };
}

/** Whether `folder` is a servable model folder (a config.json with a model_type; a run's config.json has none). */
export function isModelFolder(folder: string): boolean {
  try {
    return (
      typeof (JSON.parse(readFileSync(join(folder, 'config.json'), 'utf8')) as { model_type?: unknown })
        .model_type === 'string'
    );
  } catch {
    return false;
  }
}

/** The servable model of a folder: itself, or the `model/` a training run exported into it; else null. */
export function servedModelOf(folder: string): string | null {
  if (isModelFolder(folder)) return folder;
  const exported = join(folder, 'model');
  return isModelFolder(exported) ? exported : null;
}

/**
 * The marker `model import`/`model pull` write into a folder (src/model/import-gguf-model.ts):
 * a pretrained model there is served when asked for by `--model`, never picked as the default.
 */
const IMPORTED_MODEL_MARKER = 'agentmath-import.json';

/**
 * The default embedded model of a project: the tool run's model when it exists, else the first
 * other model under `.agentmath/models/` by name (a model folder, or a run's `model/`) that is
 * not an imported pretrained model, else null.
 */
export function findEmbeddedModel(root: string = process.cwd()): string | null {
  const paths = embeddedModelPaths(root);
  const tool = servedModelOf(paths.tool);
  if (tool !== null) return tool;
  if (!existsSync(paths.models)) return null;
  const folders = readdirSync(paths.models, { withFileTypes: true })
    .filter(
      (entry) => entry.isDirectory() && !existsSync(join(paths.models, entry.name, IMPORTED_MODEL_MARKER)),
    )
    .map((entry) => servedModelOf(join(paths.models, entry.name)))
    .filter((folder): folder is string => folder !== null)
    .sort();
  return folders[0] ?? null;
}
