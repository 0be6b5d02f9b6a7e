import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameDecoder } from './frame-codec.ts';

describe('frame codec', () => {
  it('round-trips messages split across arbitrary chunk boundaries', () => {
    const bytes = Buffer.concat([encodeFrame({ id: 1, text: 'é∑' }), encodeFrame({ id: 2 })]);
    const decoder = new FrameDecoder(1024);
    const messages = [];
    for (let index = 0; index < bytes.length; index += 3)
      messages.push(...decoder.push(bytes.subarray(index, index + 3)));
    expect(messages).toEqual([{ id: 1, text: 'é∑' }, { id: 2 }]);
  });

  it('rejects oversized frames and non-object payloads', () => {
    expect(() => new FrameDecoder(4).push(encodeFrame({ id: 123 }))).toThrow(/exceeds/);
    expect(() => new FrameDecoder(64).push(encodeFrame([1, 2]))).toThrow(/not a JSON object/);
    expect(() => new FrameDecoder(64).push(Buffer.from([0, 0, 0, 2, 0x7b, 0x7b]))).toThrow();
  });
});
