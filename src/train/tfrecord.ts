/**
 * TFRecord framing, the container of TensorBoard event files: each record is
 * `uint64 length (little-endian) · uint32 masked CRC32C of those 8 bytes · data · uint32 masked
 * CRC32C of data`. CRC32C is the Castagnoli polynomial (reflected 0x82F63B78); the mask is
 * TensorFlow's `((crc >>> 15) | (crc << 17)) + 0xa282ead8`. Covers writing one record; reading
 * is left to the readers (TensorBoard; the test decodes it independently).
 */

const CASTAGNOLI_REFLECTED = 0x82f63b78;
const MASK_DELTA = 0xa282ead8;

const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = byte;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 1 ? (crc >>> 1) ^ CASTAGNOLI_REFLECTED : crc >>> 1;
    table[byte] = crc >>> 0;
  }
  return table;
})();

/** CRC32C (Castagnoli) of `bytes`, as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (crcTable[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TensorFlow's masked CRC32C (a CRC stored beside data that itself holds CRCs). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return (((crc >>> 15) | (crc << 17)) + MASK_DELTA) >>> 0;
}

/** One TFRecord: length, its masked CRC, the data, the data's masked CRC. */
export function tfRecord(data: Uint8Array): Buffer {
  const record = Buffer.alloc(8 + 4 + data.length + 4);
  record.writeBigUInt64LE(BigInt(data.length), 0);
  record.writeUInt32LE(maskedCrc32c(record.subarray(0, 8)), 8);
  record.set(data, 12);
  record.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return record;
}
