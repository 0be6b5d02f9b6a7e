/**
 * What the catalogue says about one record file of a run folder: where it is, which commands
 * write it, what one line (or the file) is, and its schema, the contract other tools read.
 */
import type { z } from 'zod';

export type RecordFile = {
  /** Stable name: the run kind and the file (`sft-model/metrics.jsonl`); tests name it. */
  id: string;
  /** Where it is in the run folder (`DIR/eval-runs/step-NNNNN/config.json`). */
  path: string;
  /** JSON lines (one record a line, appended), or one JSON document. */
  format: 'jsonl' | 'json';
  /** The commands that write it. */
  writtenBy: readonly string[];
  /** What one line (or the document) is, and when it is written. */
  summary: string;
  /** The schema a line (or the document) must satisfy. */
  schema: z.ZodType;
  /** The page that describes the fields the schema leaves without a description. */
  fieldsDescribedIn?: string;
};
