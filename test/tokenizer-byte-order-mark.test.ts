/**
 * U+FEFF at the start of decoded text is a character the ids spell (the `tokenizers` library
 * keeps it), not a byte-order mark: `TextDecoder` drops it unless told `ignoreBOM`. Found by
 * the parity corpus (`test/tokenizer-parity.test.ts`, a random mixture starting with U+FEFF).
 */
import { describe, expect, it } from 'vitest';
import { createByteLevelTokenizer, Utf8StreamDecoder } from '../src/engine/index.ts';

const TEXT = '\ufeff\ufeff x = 1';

describe('a leading U+FEFF', () => {
  it('survives encode then decode', () => {
    const tokenizer = createByteLevelTokenizer();
    expect(tokenizer.decode(tokenizer.encode(TEXT))).toBe(TEXT);
  });

  it('survives incremental decoding, also when its bytes arrive one by one', () => {
    const bytes = new TextEncoder().encode(TEXT);
    const whole = new Utf8StreamDecoder();
    expect(whole.push(bytes) + whole.end()).toBe(TEXT);
    const split = new Utf8StreamDecoder();
    let text = '';
    for (const byte of bytes) text += split.push(Uint8Array.of(byte));
    expect(text + split.end()).toBe(TEXT);
  });
});
