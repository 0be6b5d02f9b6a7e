/**
 * The control protocol between the pool and the in-jail runner: each message is a 4-byte
 * big-endian length followed by that many bytes of UTF-8 JSON. It runs over a private socket
 * (fd 3 in the jail), never over stdout, so printed text cannot pose as a message.
 */

/** Encodes one message as a frame. */
export function encodeFrame(message: unknown): Buffer {
  const payload = Buffer.from(JSON.stringify(message), 'utf8');
  const header = Buffer.alloc(4);
  header.writeUInt32BE(payload.length, 0);
  return Buffer.concat([header, payload]);
}

/** Splits a byte stream into messages; rejects frames over `maxFrameBytes` or not JSON objects. */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  #buffer: Buffer = Buffer.alloc(0);

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Adds bytes; returns the complete messages, or throws `Error` on a malformed stream. */
  push(chunk: Buffer): Record<string, unknown>[] {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const messages: Record<string, unknown>[] = [];
    while (this.#buffer.length >= 4) {
      const length = this.#buffer.readUInt32BE(0);
      if (length > this.#maxFrameBytes)
        throw new Error(`frame of ${length} bytes exceeds ${this.#maxFrameBytes}`);
      if (this.#buffer.length < 4 + length) break;
      const text = this.#buffer.subarray(4, 4 + length).toString('utf8');
      this.#buffer = this.#buffer.subarray(4 + length);
      const message: unknown = JSON.parse(text);
      if (typeof message !== 'object' || message === null || Array.isArray(message)) {
        throw new Error('frame is not a JSON object');
      }
      messages.push(message as Record<string, unknown>);
    }
    return messages;
  }
}
