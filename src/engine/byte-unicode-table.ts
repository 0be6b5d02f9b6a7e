/**
 * The byte ↔ unicode table of byte-level BPE (GPT-2, Qwen2.5, Llama 3): every byte maps to a
 * printable character, so a vocabulary of strings can hold arbitrary bytes. Printable Latin-1
 * bytes (33–126, 161–172, 174–255) map to themselves; the other 68 map to U+0100 onwards in
 * byte order.
 */

function buildTables(): { byteToChar: string[]; charToByte: Map<string, number> } {
  const byteToChar: string[] = new Array(256);
  const charToByte = new Map<string, number>();
  let next = 256;
  for (let byte = 0; byte < 256; byte++) {
    const printable =
      (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
    const char = String.fromCodePoint(printable ? byte : next++);
    byteToChar[byte] = char;
    charToByte.set(char, byte);
  }
  return { byteToChar, charToByte };
}

const tables = buildTables();

/** The character that stands for `byte` in a byte-level vocabulary. */
export function byteToUnicode(byte: number): string {
  return tables.byteToChar[byte]!;
}

/** The byte a byte-level vocabulary character stands for, or undefined for other characters. */
export function unicodeToByte(char: string): number | undefined {
  return tables.charToByte.get(char);
}

/** The UTF-8 bytes of `text` written as byte-level characters. */
export function bytesToByteLevelString(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += tables.byteToChar[byte]!;
  return out;
}
