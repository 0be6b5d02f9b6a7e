/**
 * Where the embedded arith models live in a project: `.agentmath/models/arith-tool` (trained
 * on tool-augmented solutions, the default policy) and `.agentmath/models/arith-text` (the
 * text-only baseline). Each is a model folder the worker can serve (`--model DIR`).
 */
import { join, resolve } from 'node:path';

/** The two embedded model folders of a project, and the folder holding them. */
export type EmbeddedModelPaths = { models: string; tool: string; text: string };

/** Resolves the embedded model folders under `root` (default: the working directory). */
export function embeddedModelPaths(root: string = process.cwd()): EmbeddedModelPaths {
  const models = join(resolve(root), '.agentmath', 'models');
  return { models, tool: join(models, 'arith-tool'), text: join(models, 'arith-text') };
}
