/**
 * The fields of a record schema, flattened for people and for the documented-fields check: one
 * entry per field at every depth, named by its path (`segments[].tokenIds`: a field of each
 * element of the array `segments`; `stalenessHistogram.*`: the values of an object keyed by
 * data), with its JSON type, unit, description, and whether every line carries it. Read from
 * the schema's JSON Schema (`z.toJSONSchema`), where `.meta({ description, unit, deprecated })`
 * lands; the branches of a union contribute their fields together (a field of one branch only
 * is not `always`).
 */
import { z } from 'zod';

/** What a schema declares about a field with `.meta(...)`. */
export type FieldMeta = {
  description?: string;
  /** The unit of a number (`ms`, `tokens`, `tokens/s`, `fraction 0–1`, …). */
  unit?: string;
  /** A field still written under its old name for the deprecation period (docs/records.md). */
  deprecated?: boolean;
  /** The version that deprecated it. */
  deprecatedSince?: string;
  /** The field to read instead. */
  replacedBy?: string;
};

export type RecordField = {
  path: string;
  /** JSON types, e.g. `number | null`, `"sglang" | "vllm"`, `array`, `object`. */
  type: string;
  /** Present whenever the object that holds it is (on every line, for a top-level field). */
  always: boolean;
} & FieldMeta;

type JsonSchema = {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
} & FieldMeta;

/** Every field of `schema` (its output: defaults applied), parents before their children. */
export function recordFields(schema: z.ZodType): RecordField[] {
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as unknown as JsonSchema;
  const fields = new Map<string, RecordField>();
  collect(json, '', fields);
  return [...fields.values()];
}

function collect(schema: JsonSchema, prefix: string, into: Map<string, RecordField>): void {
  const objects = variants(schema).filter((branch) => branch.properties !== undefined);
  for (const branch of variants(schema)) {
    for (const [name, field] of Object.entries(branch.properties ?? {})) {
      const path = prefix === '' ? name : `${prefix}.${name}`;
      // A field of a union's object branches is always there only when each of them requires it.
      const always = objects.every((other) => (other.required ?? []).includes(name));
      add(into, path, field, always);
      collect(field, path, into);
    }
    if (branch.items !== undefined) collect(branch.items, `${prefix}[]`, into);
    if (typeof branch.additionalProperties === 'object' && branch.properties === undefined) {
      const path = `${prefix}.*`;
      add(into, path, branch.additionalProperties, false);
      collect(branch.additionalProperties, path, into);
    }
  }
}

function add(into: Map<string, RecordField>, path: string, schema: JsonSchema, always: boolean): void {
  const type = typeOf(schema);
  const existing = into.get(path);
  if (existing !== undefined) {
    existing.type = mergeTypes([existing.type, type]);
    const meta = metaOf(schema);
    Object.assign(existing, { ...meta, ...withoutUndefined(existing) });
    return;
  }
  const meta = metaOf(schema);
  into.set(path, { path, type, always, ...meta });
}

const META_KEYS = ['description', 'unit', 'deprecated', 'deprecatedSince', 'replacedBy'] as const;

/** The first value of each meta key on the schema or its alternatives. */
function metaOf(schema: JsonSchema): FieldMeta {
  const found: Record<string, unknown> = {};
  for (const part of [schema, ...variants(schema)]) {
    for (const key of META_KEYS) if (part[key] !== undefined) found[key] ??= part[key];
  }
  return found as FieldMeta;
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined)) as Partial<T>;
}

/** The alternatives of a union (a nullable field is a union with null), or the schema alone. */
function variants(schema: JsonSchema): JsonSchema[] {
  const parts = schema.anyOf ?? schema.oneOf ?? schema.allOf;
  return parts === undefined ? [schema] : parts.flatMap(variants);
}

function typeOf(schema: JsonSchema): string {
  const names = variants(schema).map((part) => {
    if (part.const !== undefined) return JSON.stringify(part.const);
    if (part.enum !== undefined) return part.enum.map((value) => JSON.stringify(value)).join(' | ');
    if (Array.isArray(part.type)) return part.type.join(' | ');
    if (part.type === 'array' && part.items !== undefined) {
      const item = typeOf(part.items);
      return item.includes(' | ') ? `(${item})[]` : `${item}[]`;
    }
    return part.type ?? 'any';
  });
  return mergeTypes(names);
}

/** One union of type names, each once; an array's parenthesised union stays whole. */
function mergeTypes(names: readonly string[]): string {
  const parts = names.flatMap((name) => name.split(/ \| (?![^(]*\))/));
  return [...new Set(parts)].join(' | ');
}
