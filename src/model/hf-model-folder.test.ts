import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertHuggingFaceTokenizerFiles, isHuggingFaceModelFolder } from './hf-model-folder.ts';

const folder = mkdtempSync(join(tmpdir(), 'agentmath-model-folder-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

function modelFolder(name: string, config: string, tokenizer = true): string {
  const dir = join(folder, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'config.json'), config);
  if (tokenizer) writeFileSync(join(dir, 'tokenizer.json'), '{}');
  return dir;
}

describe('isHuggingFaceModelFolder', () => {
  it('routes a Hugging Face folder to the distributed trainer and a saved byte model to the embedded one', () => {
    expect(isHuggingFaceModelFolder(modelFolder('qwen3', '{"model_type": "qwen3"}'))).toBe(true);
    // A byte model saved by `train sft` also has config.json and tokenizer.json.
    expect(isHuggingFaceModelFolder(modelFolder('byte', '{"model_type": "agentmath-byte-gpt"}'))).toBe(false);
    expect(isHuggingFaceModelFolder(modelFolder('broken', '{not json'))).toBe(false);
    expect(isHuggingFaceModelFolder('tiny')).toBe(false);
  });

  it('decides from config.json alone, and names the tokenizer file a Hugging Face folder lacks', () => {
    const noTokenizer = modelFolder('no-tokenizer', '{"model_type": "llama"}', false);
    // Not the byte model: the missing tokenizer is this folder's fault, named, not a reason to change paths.
    expect(isHuggingFaceModelFolder(noTokenizer)).toBe(true);
    expect(() => assertHuggingFaceTokenizerFiles(noTokenizer)).toThrow(
      expect.objectContaining({
        code: 'MODEL_FOLDER_INCOMPLETE',
        message: expect.stringMatching(
          /no-tokenizer \(--model\): .*without tokenizer\.json and tokenizer_config\.json/,
        ),
      }),
    );
    const complete = modelFolder('complete', '{"model_type": "qwen3"}');
    writeFileSync(join(complete, 'tokenizer_config.json'), '{}');
    expect(() => assertHuggingFaceTokenizerFiles(complete)).not.toThrow();
  });
});
