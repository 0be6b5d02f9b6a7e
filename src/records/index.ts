/**
 * The record files of run folders as a contract: the catalogue (each file's schema, path and
 * writers), the documented-fields rule, and the reference page rendered from them.
 */
export {
  DEPRECATION_MINOR_VERSIONS,
  type DocumentedField,
  type DocumentedFields,
  deprecationEnded,
  documentedFieldIssues,
  withCurrentFields,
} from './documented-fields.ts';
export { type FieldMeta, type RecordField, recordFields } from './record-fields.ts';
export type { RecordFile } from './record-file.ts';
export { RECORD_FILES, recordFile } from './record-files.ts';
export { renderRecordsReference } from './records-reference.ts';
