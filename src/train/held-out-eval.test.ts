/**
 * Held-out evaluation speaks the served model's token ids: a scripted SGLang server whose
 * "model" has its own tokenizer (the byte-level one shifted by 1000 ids) answers only prompts
 * encoded with that tokenizer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startScriptedSglangServer } from '../../test/agent-fixtures.ts';
import { createByteLevelTokenizer } from '../engine/index.ts';
import type { Tokenizer } from '../engine/tokenizer.ts';
import { arithEvalProblems } from '../tasks/index.ts';
import { evaluateHeldOut } from './held-out-eval.ts';

const SHIFT = 1000;

/** The byte-level tokenizer with every id moved up by SHIFT: a model with its own vocabulary. */
function shiftedTokenizer(): Tokenizer {
  const bytes = createByteLevelTokenizer();
  return {
    name: 'shifted',
    eosTokenId: (bytes.eosTokenId ?? 256) + SHIFT,
    encode: (text, options) => bytes.encode(text, options).map((id) => id + SHIFT),
    decode: (ids) => bytes.decode(ids.filter((id) => id >= SHIFT).map((id) => id - SHIFT)),
    applyChatTemplate: (messages) => bytes.applyChatTemplate(messages),
  };
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('evaluateHeldOut', () => {
  it("defect 10 (held-out evaluation hard-codes the byte tokenizer): prompts are encoded with the model's tokenizer", async () => {
    const tokenizer = shiftedTokenizer();
    const [problem] = arithEvalProblems({ count: 1, levels: [0] });
    if (problem === undefined) throw new Error('no eval problem');
    const server = await startScriptedSglangServer({
      model: { parts: [`\\boxed{${problem.answer}}`] },
      tokenizer,
    });
    const folder = mkdtempSync(join(tmpdir(), 'agentmath-held-out-'));
    cleanups.push(
      () => server.close(),
      () => rmSync(folder, { recursive: true, force: true }),
    );
    const result = await evaluateHeldOut({
      engineUrl: server.url,
      problems: [problem],
      contextTokens: 4096,
      tokenizer,
      outDir: join(folder, 'eval'),
      concurrency: 1,
      maxToolCalls: 0,
    });
    // With byte ids the server would decode no response marker and the trajectory would fail.
    expect(result).toMatchObject({ problems: 1, correct: 1, accuracy: 1 });
  });

  it('gives no accuracy when no problem was graded (the engine is down): missing, with the reason', async () => {
    const problems = arithEvalProblems({ count: 2, levels: [0] });
    const folder = mkdtempSync(join(tmpdir(), 'agentmath-held-out-'));
    cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
    const evaluation = evaluateHeldOut({
      engineUrl: 'http://127.0.0.1:1',
      problems,
      contextTokens: 4096,
      tokenizer: createByteLevelTokenizer(),
      outDir: join(folder, 'eval'),
      concurrency: 2,
      maxToolCalls: 0,
    });
    await expect(evaluation).rejects.toMatchObject({
      code: 'HELD_OUT_EVAL_MISSING',
      message: expect.stringContaining('no problem of 2 was graded (2 ended in an engine or sandbox error'),
    });
  }, 60_000);
});
