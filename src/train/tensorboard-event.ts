/**
 * The few fields of TensorBoard's `Event` protobuf (tensorflow/core/util/event.proto and
 * framework/summary.proto) that a scalar logger needs, hand-encoded: no protobuf dependency.
 *
 *   Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
 *           SessionLog session_log = 7; }  (6 is the deprecated log_message)
 *   Summary { repeated Value value = 1; }
 *   Value { string tag = 1; float simple_value = 2; TensorProto tensor = 8; SummaryMetadata metadata = 9; }
 *   SummaryMetadata { PluginData plugin_data = 1 { string plugin_name = 1; } }
 *   TensorProto { DataType dtype = 1 (DT_STRING = 7); TensorShapeProto tensor_shape = 2; repeated bytes string_val = 8; }
 *   SessionLog { SessionStatus status = 1 (START = 1); }
 *
 * Scalars are `simple_value` (float32: what TensorBoard's scalar dashboard reads); text (the
 * run's configuration) is a scalar string tensor for the text plugin.
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;
const DT_STRING = 7;
const SESSION_START = 1;
/** What TensorBoard expects in the first event of every file. */
export const EVENT_FILE_VERSION = 'brain.Event:2';

function varint(value: number): number[] {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`not a varint: ${value}`);
  const bytes: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    bytes.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  bytes.push(rest);
  return bytes;
}

function key(field: number, wire: number): number[] {
  return varint(field * 8 + wire);
}

function bytesField(field: number, value: Uint8Array | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([Buffer.from([...key(field, WIRE_BYTES), ...varint(bytes.length)]), bytes]);
}

function varintField(field: number, value: number): Buffer {
  return Buffer.from([...key(field, WIRE_VARINT), ...varint(value)]);
}

function doubleField(field: number, value: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleLE(value);
  return Buffer.concat([Buffer.from(key(field, WIRE_FIXED64)), bytes]);
}

function floatField(field: number, value: number): Buffer {
  const bytes = Buffer.alloc(4);
  bytes.writeFloatLE(value);
  return Buffer.concat([Buffer.from(key(field, WIRE_FIXED32)), bytes]);
}

function event(wallTimeSeconds: number, step: number, body: Buffer[]): Buffer {
  return Buffer.concat([doubleField(1, wallTimeSeconds), varintField(2, step), ...body]);
}

/** The first event of a file: its version string. */
export function fileVersionEvent(wallTimeSeconds: number): Buffer {
  return event(wallTimeSeconds, 0, [bytesField(3, EVENT_FILE_VERSION)]);
}

/** One event holding every scalar of a step (float32, as TensorBoard stores them). */
export function scalarsEvent(wallTimeSeconds: number, step: number, scalars: Record<string, number>): Buffer {
  const values = Object.entries(scalars).map(([tag, value]) =>
    bytesField(1, Buffer.concat([bytesField(1, tag), floatField(2, value)])),
  );
  return event(wallTimeSeconds, step, [bytesField(5, Buffer.concat(values))]);
}

/** A text summary (the text plugin renders it as Markdown). */
export function textEvent(wallTimeSeconds: number, step: number, tag: string, text: string): Buffer {
  const tensor = Buffer.concat([
    varintField(1, DT_STRING),
    bytesField(2, Buffer.alloc(0)),
    bytesField(8, text),
  ]);
  const metadata = bytesField(1, bytesField(1, 'text'));
  const value = Buffer.concat([bytesField(1, tag), bytesField(8, tensor), bytesField(9, metadata)]);
  return event(wallTimeSeconds, step, [bytesField(5, bytesField(1, value))]);
}

/**
 * A session start at `step`: TensorBoard's reader then drops this run's points at steps ≥ `step`
 * from before it (a resumed run redoes those steps).
 */
export function sessionStartEvent(wallTimeSeconds: number, step: number): Buffer {
  return event(wallTimeSeconds, step, [bytesField(7, varintField(1, SESSION_START))]);
}
