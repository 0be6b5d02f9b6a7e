import { describe, expect, it } from 'vitest';
import { createByteLevelTokenizer } from '../engine/index.ts';
import { getDialect } from '../protocol/index.ts';
import type { TaskSolution } from '../tasks/types.ts';
import { buildSftExample } from './sft-example.ts';

const solution: TaskSolution = {
  problem: { id: 'p1', family: 'arith', level: 2, problem: 'Compute 777 * 34.', answer: '26418' },
  style: 'tool',
  segments: [
    { kind: 'model', text: '<think>Multiply exactly in Python. <code>\nprint(777 * 34)\n</code>' },
    { kind: 'tool', text: '\n<interpreter>\n26418\n</interpreter>\n' },
    { kind: 'model', text: 'The product is 26418.</think>\nThe answer is \\boxed{26418}.' },
  ],
};

describe('buildSftExample', () => {
  const tokenizer = createByteLevelTokenizer();
  const example = buildSftExample(solution, tokenizer, getDialect('tags'));
  const text = (ids: number[]) => Buffer.from(ids.filter((id) => id < 256)).toString('utf8');

  it('starts with the chat-templated prompt the agent loop sends, masked', () => {
    const prompt = '<|user|>\nCompute 777 * 34.\n<|assistant|>\n';
    expect(text(example.inputIds.slice(0, prompt.length))).toBe(prompt);
    expect(example.lossMask.slice(0, prompt.length).every((mask) => mask === 0)).toBe(true);
  });

  it('masks exactly the interpreter output and trains on model text and the final EOS', () => {
    const maskedResponse = example.inputIds.filter((_, index) => example.lossMask[index] === 0);
    expect(text(maskedResponse)).toBe(
      `<|user|>\nCompute 777 * 34.\n<|assistant|>\n\n<interpreter>\n26418\n</interpreter>\n`,
    );
    const trained = example.inputIds.filter((_, index) => example.lossMask[index] === 1);
    expect(trained.at(-1)).toBe(256);
    expect(text(trained)).toBe(`${solution.segments[0]!.text}${solution.segments[2]!.text}`);
    expect(example.inputIds.length).toBe(example.lossMask.length);
    expect(example.level).toBe(2);
  });

  it('encodes special-token text in solutions as plain bytes', () => {
    const tricky: TaskSolution = { ...solution, segments: [{ kind: 'tool', text: '<|endoftext|>' }] };
    const ids = buildSftExample(tricky, tokenizer, getDialect('tags')).inputIds;
    expect(ids.filter((id) => id === 256)).toHaveLength(1); // only the appended EOS
  });
});
