import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeByteLevelTokenizerFiles } from './byte-level-tokenizer.ts';
import { loadTokenizer } from './load-tokenizer.ts';

const folder = mkdtempSync(join(tmpdir(), 'agentmath-load-tokenizer-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe('loadTokenizer and the files it reads', () => {
  it('accepts tokenizer files that start with a UTF-8 byte-order mark', async () => {
    const dir = join(folder, 'bom');
    await writeByteLevelTokenizerFiles(dir);
    for (const name of ['tokenizer.json', 'tokenizer_config.json'])
      writeFileSync(join(dir, name), `\uFEFF${readFileSync(join(dir, name), 'utf8')}`);
    const tokenizer = await loadTokenizer(dir);
    expect(tokenizer.decode(tokenizer.encode('x = 1'))).toBe('x = 1');
  });

  it('names a tokenizer.json that is not JSON, with the code TOKENIZER_INVALID', async () => {
    const dir = join(folder, 'broken');
    await writeByteLevelTokenizerFiles(dir);
    writeFileSync(join(dir, 'tokenizer.json'), '{"model": {"voc');
    const error = await loadTokenizer(dir).catch((caught: unknown) => caught);
    expect((error as { code?: string }).code).toBe('TOKENIZER_INVALID');
    expect((error as Error).message).toContain(`${join(dir, 'tokenizer.json')}: not JSON`);
  });
});
