/**
 * docs/records.md, rendered from the catalogue of record files and their schemas: every
 * file, the commands that write it, and each field's type, unit, presence and meaning. The
 * page is generated (`node scripts/records-reference.ts --write`) and a test fails when the
 * checked-in page differs, so it cannot drift from the schemas.
 */
import { DEPRECATION_MINOR_VERSIONS } from './documented-fields.ts';
import { type RecordField, recordFields } from './record-fields.ts';
import type { RecordFile } from './record-file.ts';

/** The Markdown of docs/records.md. */
export function renderRecordsReference(files: readonly RecordFile[]): string {
  const lines = [
    '# Record files',
    '',
    '<!-- Generated from the schemas by `node scripts/records-reference.ts --write`; do not edit by hand:',
    '     src/records/record-files.test.ts fails when this page differs from what the schemas say. -->',
    '',
    'The files of a run folder that reports, scripts and other tools read. Each one has a zod',
    'schema in the code that writes it (the writer’s type comes from the schema), listed in',
    '`src/records/record-files.ts`, and an end-to-end test checks a record the real command wrote',
    'against it. This page is rendered from those schemas.',
    '',
    '## The contract',
    '',
    '- A field may be added. A documented field is never removed or renamed: a renamed field is',
    '  still written under its old name beside the new one, marked deprecated below, for a',
    '  deprecation period of the rest of the minor version that deprecated it and the next',
    `  ${DEPRECATION_MINOR_VERSIONS === 1 ? 'one' : `${DEPRECATION_MINOR_VERSIONS} minor versions`}: deprecated in 0.1.x, it is still written in every`,
    `  0.${1 + DEPRECATION_MINOR_VERSIONS}.x release and may go in 0.${2 + DEPRECATION_MINOR_VERSIONS}.0.`,
    '- `src/records/documented-fields.json` lists every field each file ever documented, with its',
    '  deprecation; `src/records/record-files.test.ts` fails when a listed field leaves its schema',
    '  before its period ended, and when a schema has a field the list does not (add it with',
    '  `node scripts/records-reference.ts --write`, which also renders this page).',
    '- Paths: `a.b` is field `b` of object `a`; `a[].b` is field `b` of each element of array `a`;',
    '  `a.*` is each value of an object keyed by data (the key is named in the description).',
    '- *Always*: present on every line (a nested field: whenever the object holding it is).',
    '  Otherwise the description says when it is there.',
    '- A figure that could not be measured is `null`, never 0, and a number that is not finite is',
    '  written as `null` (JSON has no NaN). JSON-lines files are appended as a run goes and cut',
    '  back to the last committed step on `--resume`.',
    '',
    '## Files',
    '',
    '| record file | path | written by | format |',
    '| --- | --- | --- | --- |',
    ...files.map(
      (file) =>
        `| [\`${file.id}\`](#${anchor(file.id)}) | \`${file.path}\` | ${file.writtenBy.map((command) => `\`${command}\``).join(', ')} | ${file.format === 'jsonl' ? 'JSON lines' : 'JSON'} |`,
    ),
    '',
  ];
  for (const file of files) lines.push(...section(file));
  return `${lines.join('\n').trimEnd()}\n`;
}

function section(file: RecordFile): string[] {
  const fields = recordFields(file.schema);
  const lines = [
    `## \`${file.id}\``,
    '',
    `\`${file.path}\`, written by ${file.writtenBy.map((command) => `\`${command}\``).join(', ')}. ${file.summary}`,
    '',
  ];
  if (file.fieldsDescribedIn !== undefined) {
    lines.push(`Fields without a description here are described in ${file.fieldsDescribedIn}.`, '');
  }
  lines.push('| field | type | unit | always | description |', '| --- | --- | --- | --- | --- |');
  for (const field of fields) lines.push(row(field));
  lines.push('');
  return lines;
}

function row(field: RecordField): string {
  const deprecation =
    field.deprecatedSince === undefined
      ? ''
      : ` **Deprecated** since ${field.deprecatedSince}${field.replacedBy === undefined ? '' : `: read \`${field.replacedBy}\``}.`;
  const described = field.description ?? '—';
  const description = deprecation === '' ? described : `${described.replace(/\.?$/, '.')}${deprecation}`;
  return `| \`${field.path}\` | ${cell(field.type)} | ${cell(field.unit ?? '')} | ${field.always ? 'yes' : 'no'} | ${cell(description)} |`;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

/** The anchor GitHub gives a heading: lower case, punctuation but `-` and `_` dropped. */
function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replaceAll(' ', '-');
}
