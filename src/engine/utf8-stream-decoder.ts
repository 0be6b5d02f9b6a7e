/**
 * Incremental decoding of a token stream: bytes of a character split across tokens are held
 * back until the character is complete, so text can be shown as tokens arrive.
 */

/** Turns successive byte chunks into text, never emitting half a UTF-8 character. */
export class Utf8StreamDecoder {
  // ignoreBOM: a U+FEFF at the start of a generation is text, not a byte-order mark to drop.
  readonly #decoder = new TextDecoder('utf-8', { ignoreBOM: true });

  /** Text completed by `bytes` (an incomplete trailing character waits for the next push). */
  push(bytes: Uint8Array): string {
    return this.#decoder.decode(bytes, { stream: true });
  }

  /** Flushes what is left; an unfinished character becomes U+FFFD. */
  end(): string {
    return this.#decoder.decode();
  }
}
