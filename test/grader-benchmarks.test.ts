import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { gradeAnswer } from '../src/grader/index.ts';
import { useGraderTestSandbox } from './grader-sandbox.ts';

/** AGENTMATH_DATA_DIR, else the shared data folder beside the project or beside its worktree. */
function benchmarkDirectory(): string | null {
  const root = resolve(import.meta.dirname, '..');
  const candidates = [
    process.env.AGENTMATH_DATA_DIR && join(process.env.AGENTMATH_DATA_DIR, 'benchmarks'),
    process.env.AGENTMATH_DATA_DIR,
    join(root, '..', 'shared', 'data', 'benchmarks'),
    join(root, '..', '..', 'shared', 'data', 'benchmarks'),
    '/work/shared/data/benchmarks',
  ];
  for (const candidate of candidates) {
    if (
      candidate &&
      existsSync(candidate) &&
      readdirSync(candidate).some((name) => name.endsWith('.jsonl'))
    ) {
      return candidate;
    }
  }
  return null;
}

const directory = benchmarkDirectory();
const answers: { id: string; answer: string }[] = directory
  ? readdirSync(directory)
      .filter((name) => name.endsWith('.jsonl'))
      .flatMap((name) =>
        readFileSync(join(directory, name), 'utf8')
          .split('\n')
          .filter((line) => line.trim() !== '')
          .map((line) => JSON.parse(line) as { id: string; answer: string }),
      )
  : [];

describe.skipIf(directory === null)('benchmark reference answers', () => {
  const sandboxOf = useGraderTestSandbox();

  it('finds the benchmark files', () => {
    expect(answers.length).toBeGreaterThan(600);
  });

  it('every reference equals itself, bare and boxed in a sentence, on the fast path', async () => {
    const failures: string[] = [];
    for (const { id, answer } of answers) {
      const bare = await gradeAnswer(answer, answer);
      const wrapped = await gradeAnswer(
        `We compute carefully, so the final result is $\\boxed{${answer}}$.`,
        answer,
      );
      if (!bare.correct) failures.push(`${id} bare: ${bare.reason}`);
      if (!wrapped.correct || wrapped.extracted !== answer.trim())
        failures.push(`${id} boxed: ${wrapped.reason}`);
    }
    expect(failures).toEqual([]);
  });

  it('every reference parses into something other than a parse failure', async () => {
    const { prepareAnswer } = await import('../src/grader/index.ts');
    const unparsed = answers
      .map(({ id, answer }) => ({ id, parsed: prepareAnswer(answer) }))
      .filter(({ parsed }) => parsed === null || JSON.stringify(parsed).includes('"unparsed"'))
      .map(({ id }) => id);
    expect(unparsed).toEqual([]);
  });

  it('the HMMT answer with two values grades equal with the values swapped', async () => {
    const pair = answers.find(({ id, answer }) => id.startsWith('hmmt') && answer.includes(','));
    expect(pair).toBeDefined();
    const [first, second] = pair!.answer.split(/,(?![^{]*})/);
    const swapped = `${second!.trim()}, ${first!.trim()}`;
    const result = await gradeAnswer(`Both roots work: \\boxed{${swapped}}`, pair!.answer, {
      sandbox: sandboxOf(),
    });
    expect(result).toMatchObject({ correct: true, reason: 'structural' });
    const onlyOne = await gradeAnswer(`\\boxed{${first}}`, pair!.answer, { sandbox: sandboxOf() });
    expect(onlyOne.correct).toBe(false);
  });
});
