import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type DocumentedFields,
  deprecationEnded,
  documentedFieldIssues,
  RECORD_FILES,
  type RecordFile,
  recordFields,
  renderRecordsReference,
  withCurrentFields,
} from './index.ts';

const root = resolve(import.meta.dirname, '../..');
const documented = JSON.parse(
  readFileSync(join(import.meta.dirname, 'documented-fields.json'), 'utf8'),
) as DocumentedFields;
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

describe('record files', () => {
  it('keep every documented field: one can be added, none removed or renamed before its deprecation ended', () => {
    expect(documentedFieldIssues({ files: RECORD_FILES, documented, version })).toEqual([]);
  });

  it('are described on docs/records.md exactly as the schemas render it', () => {
    const page = readFileSync(join(root, 'docs/records.md'), 'utf8');
    // On a difference: node scripts/records-reference.ts --write
    expect(page).toBe(renderRecordsReference(RECORD_FILES));
  });

  it('describe each field, or name the page that does', () => {
    const undescribed = RECORD_FILES.filter((file) => file.fieldsDescribedIn === undefined).flatMap((file) =>
      recordFields(file.schema)
        .filter((field) => field.description === undefined)
        .map((field) => `${file.id}: ${field.path}`),
    );
    expect(undescribed).toEqual([]);
  });

  it('are each checked against a record the real command wrote, by an end-to-end test', () => {
    const checked = new Set<string>();
    for (const name of readdirSync(join(root, 'test')).filter((entry) => entry.endsWith('.test.ts'))) {
      const text = readFileSync(join(root, 'test', name), 'utf8');
      for (const call of text.matchAll(/expectRecordFiles?\(([\s\S]*?)\);/g)) {
        for (const id of (call[1] ?? '').matchAll(/'([\w-]+\/[\w.-]+)'/g)) checked.add(id[1] ?? '');
      }
    }
    expect(RECORD_FILES.map((file) => file.id).filter((id) => !checked.has(id))).toEqual([]);
  });

  it("keep train sft's first documented metrics, tokens and tokensPerSecond, beside the newer ones", () => {
    const listed = Object.keys(documented['sft/metrics.jsonl'] ?? {});
    for (const field of [
      'step',
      'loss',
      'tokens',
      'learningRate',
      'gradNorm',
      'tokensPerSecond',
      'tokensTrained',
    ]) {
      expect(listed).toContain(field);
    }
  });
});

describe('the documented-fields rule', () => {
  const file = (shape: z.ZodRawShape): RecordFile => ({
    id: 'demo/metrics.jsonl',
    path: 'DIR/metrics.jsonl',
    format: 'jsonl',
    writtenBy: ['agentmath demo'],
    summary: 'A demo.',
    schema: z.object(shape).strict(),
  });
  const listed: DocumentedFields = { 'demo/metrics.jsonl': { step: {}, tokens: {} } };

  it('refuses a documented field gone from the schema, naming file and field', () => {
    const issues = documentedFieldIssues({
      files: [file({ step: z.number() })],
      documented: listed,
      version: '0.1.0',
    });
    expect(issues).toEqual([
      expect.stringMatching(/^demo\/metrics\.jsonl: documented field "tokens" is gone/),
    ]);
  });

  it('refuses a rename: the old name is gone and the new one is not documented yet', () => {
    const issues = documentedFieldIssues({
      files: [file({ step: z.number(), tokensTrained: z.number() })],
      documented: listed,
      version: '0.1.0',
    });
    expect(issues).toHaveLength(2);
    expect(issues[0]).toMatch(/"tokens" is gone/);
    expect(issues[1]).toMatch(/"tokensTrained" is not documented yet/);
  });

  it('accepts an added field once the list has it, and adding never drops what the list holds', () => {
    const grown = file({ step: z.number(), tokens: z.number(), stepMs: z.number() });
    const updated = withCurrentFields([grown], listed);
    expect(Object.keys(updated['demo/metrics.jsonl'] ?? {})).toEqual(['step', 'tokens', 'stepMs']);
    expect(documentedFieldIssues({ files: [grown], documented: updated, version: '0.1.0' })).toEqual([]);
    const shrunk = withCurrentFields([file({ step: z.number() })], updated);
    expect(Object.keys(shrunk['demo/metrics.jsonl'] ?? {})).toEqual(['step', 'tokens', 'stepMs']);
  });

  it('lets a deprecated field go only after its deprecation period, and only if the list records the deprecation', () => {
    const deprecated = file({
      step: z.number(),
      tokens: z.number().meta({ deprecated: true, deprecatedSince: '0.1.0', replacedBy: 'tokensTrained' }),
      tokensTrained: z.number(),
    });
    expect(documentedFieldIssues({ files: [deprecated], documented: listed, version: '0.1.0' })).toEqual([
      expect.stringMatching(/"tokens" is not deprecated in the schema|"tokens" is deprecated since 0\.1\.0/),
      expect.stringMatching(/"tokensTrained" is not documented yet/),
    ]);
    const recorded = withCurrentFields([deprecated], listed);
    expect(recorded['demo/metrics.jsonl']?.tokens).toEqual({
      deprecatedSince: '0.1.0',
      replacedBy: 'tokensTrained',
    });
    const gone = file({ step: z.number(), tokensTrained: z.number() });
    for (const early of ['0.1.0', '0.1.7', '0.2.9']) {
      expect(documentedFieldIssues({ files: [gone], documented: recorded, version: early })).toEqual([
        expect.stringMatching(
          /"tokens", deprecated in 0\.1\.0, is gone from the schema before its deprecation period ended/,
        ),
      ]);
    }
    for (const later of ['0.3.0', '1.0.0']) {
      expect(documentedFieldIssues({ files: [gone], documented: recorded, version: later })).toEqual([]);
    }
  });

  it('counts the period in minor versions, a new major version ending it', () => {
    expect(deprecationEnded('0.1.0', '0.2.5')).toBe(false);
    expect(deprecationEnded('0.1.3', '0.3.0')).toBe(true);
    expect(deprecationEnded('1.4.0', '2.0.0')).toBe(true);
    expect(deprecationEnded('1.4.0', '1.5.9')).toBe(false);
    expect(() => deprecationEnded('next', '0.1.0')).toThrow(/not a version/);
  });

  it('flattens nested fields, arrays and keyed objects into paths with type, unit and presence', () => {
    const fields = recordFields(
      z
        .object({
          gap: z.object({ mean: z.number().meta({ unit: 'nats' }) }).nullable(),
          rows: z.array(z.object({ id: z.string(), note: z.string().optional() })),
          histogram: z.record(z.string(), z.number()),
          missing: z.string().optional().meta({ description: 'why' }),
        })
        .strict(),
    );
    expect(fields.map(({ path, type, unit, always }) => [path, type, unit ?? null, always])).toEqual([
      ['gap', 'object | null', null, true],
      ['gap.mean', 'number', 'nats', true],
      ['rows', 'object[]', null, true],
      ['rows[].id', 'string', null, true],
      ['rows[].note', 'string', null, false],
      ['histogram', 'object', null, true],
      ['histogram.*', 'number', null, false],
      ['missing', 'string', null, false],
    ]);
    expect(fields.at(-1)?.description).toBe('why');
  });
});
