/**
 * The teacher prompts: Markdown files with `{{name}}` slots, shipped in `src/synth/prompts/`
 * and replaceable (`--prompt FILE` replaces the rewrite prompt). A slot the file does not
 * contain is an error, so a replaced prompt cannot silently drop the problem.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentMathError } from '../shared/agentmath-error.ts';
import { stripBom } from '../shared/text-input.ts';

export const PROMPTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'prompts');

export type SynthPrompts = { rewrite: string; judge: string; selfCorrect: string; continue: string };

const REQUIRED: Record<keyof SynthPrompts, string[]> = {
  rewrite: ['problem', 'solution'],
  judge: ['simulated', 'real', 'following'],
  selfCorrect: ['problem', 'prefix'],
  continue: ['problem', 'prefix'],
};

async function load(file: string, name: keyof SynthPrompts): Promise<string> {
  let text: string;
  try {
    text = stripBom(await readFile(file, 'utf8'));
  } catch (error) {
    throw new AgentMathError(
      'SYNTH_INPUT_INVALID',
      `${file}: cannot read the ${name} prompt (${(error as Error).message})`,
      { cause: error },
    );
  }
  for (const slot of REQUIRED[name]) {
    if (!text.includes(`{{${slot}}}`))
      throw new AgentMathError('SYNTH_INPUT_INVALID', `${file}: the ${name} prompt has no {{${slot}}} slot`);
  }
  return text;
}

/** The shipped prompts, with the rewrite prompt replaced when `rewriteFile` is given. */
export async function loadSynthPrompts(rewriteFile?: string): Promise<SynthPrompts> {
  return {
    rewrite: await load(rewriteFile ?? join(PROMPTS_DIR, 'rewrite.md'), 'rewrite'),
    judge: await load(join(PROMPTS_DIR, 'judge.md'), 'judge'),
    selfCorrect: await load(join(PROMPTS_DIR, 'self-correct.md'), 'selfCorrect'),
    continue: await load(join(PROMPTS_DIR, 'continue.md'), 'continue'),
  };
}

/** Fills `{{name}}` slots in one pass (a value containing `{{x}}` is not expanded again). */
export function fillPrompt(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (match, name: string) => values[name] ?? match);
}
