import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findEmbeddedModel } from './embedded-model-paths.ts';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

const MODEL_CONFIG = JSON.stringify({ model_type: 'agentmath-byte-gpt' });
const RUN_CONFIG = JSON.stringify({ steps: 800, batchSize: 8 });

/** A project whose `.agentmath/models/` holds these folders: file name → contents. */
function project(folders: Record<string, Record<string, string>>): string {
  const root = mkdtempSync(join(tmpdir(), 'agentmath-models-'));
  roots.push(root);
  for (const [name, files] of Object.entries(folders)) {
    for (const [file, text] of Object.entries(files)) {
      const path = join(root, '.agentmath', 'models', name, file);
      mkdirSync(join(path, '..'), { recursive: true });
      writeFileSync(path, text);
    }
  }
  return root;
}

const models = (root: string, ...parts: string[]) => join(root, '.agentmath', 'models', ...parts);

describe('findEmbeddedModel', () => {
  it('never picks a pulled pretrained model as the default', () => {
    const pulled = { 'config.json': MODEL_CONFIG, 'tokenizer.json': '{}', 'agentmath-import.json': '{}' };
    expect(findEmbeddedModel(project({ 'smollm2-135m-instruct': pulled }))).toBeNull();
    const root = project({ 'smollm2-135m-instruct': pulled, 'arith-text': { 'config.json': MODEL_CONFIG } });
    expect(findEmbeddedModel(root)).toBe(models(root, 'arith-text'));
  });

  it('prefers the tool model: the model its SFT run exported', () => {
    const run = { 'config.json': RUN_CONFIG, 'model/config.json': MODEL_CONFIG };
    const root = project({ 'arith-text': run, 'arith-tool': run });
    expect(findEmbeddedModel(root)).toBe(models(root, 'arith-tool', 'model'));
  });

  it('takes a run folder only once it has exported its model', () => {
    const root = project({
      'arith-tool': { 'config.json': RUN_CONFIG },
      'arith-text': { 'config.json': RUN_CONFIG, 'model/config.json': MODEL_CONFIG },
    });
    expect(findEmbeddedModel(root)).toBe(models(root, 'arith-text', 'model'));
  });
});
