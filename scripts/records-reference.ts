/**
 * docs/records.md and src/records/documented-fields.json from the record schemas.
 *
 * Usage: node scripts/records-reference.ts           prints the page and what breaks the rule
 *        node scripts/records-reference.ts --write   writes the page, adds new fields to the list
 *
 * Adding never removes: a documented field gone from its schema stays in the list, and the
 * check (src/records/record-files.test.ts) names it until its deprecation period has ended.
 * Exit status 1 while something breaks the rule.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  type DocumentedFields,
  documentedFieldIssues,
  RECORD_FILES,
  renderRecordsReference,
  withCurrentFields,
} from '../src/records/index.ts';

const root = resolve(import.meta.dirname, '..');
const pagePath = resolve(root, 'docs/records.md');
const listPath = resolve(root, 'src/records/documented-fields.json');
const version = (JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { version: string }).version;

let documented = JSON.parse(readFileSync(listPath, 'utf8')) as DocumentedFields;
const page = renderRecordsReference(RECORD_FILES);
if (process.argv.includes('--write')) {
  documented = withCurrentFields(RECORD_FILES, documented);
  writeFileSync(listPath, `${JSON.stringify(documented, null, 2)}\n`);
  writeFileSync(pagePath, page);
  process.stderr.write(`wrote ${pagePath} and ${listPath}\n`);
} else {
  process.stdout.write(page);
}
const issues = documentedFieldIssues({ files: RECORD_FILES, documented, version });
for (const issue of issues) process.stderr.write(`${issue}\n`);
process.exitCode = issues.length === 0 ? 0 : 1;
