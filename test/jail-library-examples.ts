/**
 * The example problems of docs/sandbox.md's "Libraries in the jail" section, read from the
 * document itself (so the tests run exactly what the documentation shows): per library, the
 * problem, the Python block and the expected output.
 */
import { readFileSync } from 'node:fs';

export type LibraryExample = { library: string; problem: string; code: string; output: string };

export function jailLibraryExamples(): LibraryExample[] {
  const text = readFileSync(new URL('../docs/sandbox.md', import.meta.url), 'utf8');
  const section = text.slice(text.indexOf('## Libraries in the jail'));
  const examples: LibraryExample[] = [];
  const pattern = /^#### (\S+)\n(.+)\n```python\n([\s\S]*?)```\nOutput: `([^`]+)`/gm;
  for (const match of section.matchAll(pattern)) {
    const [, library, problem, code, output] = match as unknown as [string, string, string, string, string];
    examples.push({ library, problem, code, output });
  }
  return examples;
}
