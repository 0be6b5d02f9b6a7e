/**
 * The rule that makes record files a contract: every field a record file has documented stays.
 * `documented-fields.json` (beside this file) lists, per record file, each field path ever
 * documented; a field may be added to a schema (and then to the list), never removed or
 * renamed — a renamed field keeps being written under its old name, marked deprecated, until
 * the deprecation period has passed: the rest of the minor version that deprecated it and the
 * whole next one (deprecated in 0.1.x, it may go in 0.3.0). The list keeps the field and its
 * deprecation after that, so the history stays visible. Pure: the caller reads the files.
 */

import { recordFields } from './record-fields.ts';
import type { RecordFile } from './record-file.ts';

/** A documented field: `{}`, or its deprecation. */
export type DocumentedField = { deprecatedSince?: string; replacedBy?: string };
/** Record file id → field path → what the list says of it. */
export type DocumentedFields = Record<string, Record<string, DocumentedField>>;

/** Minor versions a deprecated field is kept beyond the one that deprecated it. */
export const DEPRECATION_MINOR_VERSIONS = 1;

/** Whether a field deprecated in `since` may leave the schema at package version `version`. */
export function deprecationEnded(since: string, version: string): boolean {
  const [sinceMajor, sinceMinor] = majorMinor(since);
  const [major, minor] = majorMinor(version);
  if (major !== sinceMajor) return major > sinceMajor;
  return minor > sinceMinor + DEPRECATION_MINOR_VERSIONS;
}

function majorMinor(version: string): [number, number] {
  const match = /^(\d+)\.(\d+)\.\d+/.exec(version);
  if (match === null)
    throw new RangeError(`not a version: ${JSON.stringify(version)} (expected MAJOR.MINOR.PATCH)`);
  return [Number(match[1]), Number(match[2])];
}

/**
 * What breaks the rule, one sentence each naming the record file and the field: a documented
 * field gone from its schema before its deprecation ended, a deprecation the list does not
 * record, a schema field or record file the list does not have yet, a listed file gone.
 */
export function documentedFieldIssues({
  files,
  documented,
  version,
}: {
  files: readonly RecordFile[];
  documented: DocumentedFields;
  version: string;
}): string[] {
  const issues: string[] = [];
  const ids = new Set(files.map((file) => file.id));
  for (const id of Object.keys(documented)) {
    if (!ids.has(id)) issues.push(`${id}: documented, and no longer in the catalogue of record files`);
  }
  for (const file of files) {
    const listed = documented[file.id];
    if (listed === undefined) {
      issues.push(
        `${file.id}: not in documented-fields.json (add it: node scripts/records-reference.ts --write)`,
      );
      continue;
    }
    const fields = new Map(recordFields(file.schema).map((field) => [field.path, field]));
    for (const [path, entry] of Object.entries(listed)) {
      const field = fields.get(path);
      if (field === undefined) {
        if (entry.deprecatedSince === undefined) {
          issues.push(
            `${file.id}: documented field "${path}" is gone from the schema; a documented field stays ` +
              '(a renamed one is written under its old name too, deprecated, for the period docs/records.md states)',
          );
        } else if (!deprecationEnded(entry.deprecatedSince, version)) {
          issues.push(
            `${file.id}: field "${path}", deprecated in ${entry.deprecatedSince}, is gone from the schema before its ` +
              `deprecation period ended (at ${version}; docs/records.md)`,
          );
        }
        continue;
      }
      if (field.deprecatedSince !== entry.deprecatedSince || field.replacedBy !== entry.replacedBy) {
        issues.push(
          `${file.id}: field "${path}" is ${describeDeprecation(field)} in the schema and ${describeDeprecation(entry)} ` +
            'in documented-fields.json (node scripts/records-reference.ts --write records it)',
        );
      }
    }
    for (const path of fields.keys()) {
      if (listed[path] === undefined) {
        issues.push(
          `${file.id}: field "${path}" is not documented yet (node scripts/records-reference.ts --write adds it)`,
        );
      }
    }
  }
  return issues;
}

function describeDeprecation(field: DocumentedField): string {
  return field.deprecatedSince === undefined
    ? 'not deprecated'
    : `deprecated since ${field.deprecatedSince} for ${field.replacedBy ?? 'nothing'}`;
}

/**
 * The list with every current schema field and file added and deprecations recorded; nothing
 * is ever removed (what the rule forbids stays an issue for `documentedFieldIssues`).
 */
export function withCurrentFields(
  files: readonly RecordFile[],
  documented: DocumentedFields,
): DocumentedFields {
  const updated: DocumentedFields = structuredClone(documented);
  for (const file of files) {
    const listed: Record<string, DocumentedField> = updated[file.id] ?? {};
    updated[file.id] = listed;
    for (const field of recordFields(file.schema)) {
      const entry: DocumentedField = {};
      if (field.deprecatedSince !== undefined) entry.deprecatedSince = field.deprecatedSince;
      if (field.replacedBy !== undefined) entry.replacedBy = field.replacedBy;
      listed[field.path] = entry;
    }
  }
  return updated;
}
