import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findEmbeddedModel } from './embedded-model-paths.ts';

const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function project(folders: Record<string, string[]>): string {
  const root = mkdtempSync(join(tmpdir(), 'agentmath-models-'));
  roots.push(root);
  for (const [name, files] of Object.entries(folders)) {
    const folder = join(root, '.agentmath', 'models', name);
    mkdirSync(folder, { recursive: true });
    for (const file of files) writeFileSync(join(folder, file), '{}');
  }
  return root;
}

describe('findEmbeddedModel', () => {
  it('never picks a pulled pretrained model as the default', () => {
    const pulled = ['config.json', 'tokenizer.json', 'agentmath-import.json'];
    expect(findEmbeddedModel(project({ 'smollm2-135m-instruct': pulled }))).toBeNull();
    const root = project({ 'smollm2-135m-instruct': pulled, 'arith-text': ['config.json'] });
    expect(findEmbeddedModel(root)).toBe(join(root, '.agentmath', 'models', 'arith-text'));
  });

  it('prefers the tool model', () => {
    const root = project({ 'arith-text': ['config.json'], 'arith-tool': ['config.json'] });
    expect(findEmbeddedModel(root)).toBe(join(root, '.agentmath', 'models', 'arith-tool'));
  });
});
