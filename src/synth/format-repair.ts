/**
 * Stage 2(a), format consistency: mechanical repairs of a teacher's tags-dialect text, then the
 * protocol parser decides. Repairs: markdown code and output fences (```python / ```output)
 * become <code> / <interpreter> blocks; a <code> block left open before its <interpreter> is
 * closed there; a <think> left open is closed before the final line holding the boxed answer.
 * What the parser still reports (stray closers, nested or unclosed blocks) is not repairable.
 */
import { getDialect } from '../protocol/dialects.ts';
import { parseResponse } from '../protocol/response-parser.ts';

export type FormatResult =
  | { status: 'ok'; text: string; repairs: string[] }
  | { status: 'drop'; reason: 'format-unrepairable' | 'no-answer' | 'no-tool-call'; detail: unknown };

const markup = getDialect('tags').markup;

function fencesToTags(text: string, repairs: string[]): string {
  let next = text.replace(/```(?:python3?|py)[ \t]*\n([\s\S]*?)\n?```/g, (_match, code: string) => {
    repairs.push('markdown-code');
    return `<code>\n${code.trimEnd()}\n</code>`;
  });
  next = next.replace(/```output[ \t]*\n([\s\S]*?)\n?```/g, (_match, output: string) => {
    repairs.push('markdown-output');
    return `<interpreter>\n${output.trimEnd()}\n</interpreter>`;
  });
  return next;
}

function closeCodeBeforeOutput(text: string, repairs: string[]): string {
  return text.replace(
    /<code>((?:(?!<\/code>|<code>)[\s\S])*?)(\s*)<interpreter>/g,
    (match, code: string, space: string) => {
      if (code.includes('</code>')) return match;
      repairs.push('unclosed-code');
      return `<code>${code.trimEnd()}\n</code>${space}<interpreter>`;
    },
  );
}

function closeThink(text: string, repairs: string[]): string {
  if (!text.includes('<think>') || text.includes('</think>')) return text;
  const boxed = text.lastIndexOf('\\boxed{');
  if (boxed < 0) return text;
  const lineStart = text.lastIndexOf('\n', boxed);
  if (lineStart < 0) return text;
  repairs.push('unclosed-think');
  return `${text.slice(0, lineStart)}</think>${text.slice(lineStart)}`;
}

/** Repairs what is mechanical, then keeps the text only if it parses cleanly with an answer and a call. */
export function repairFormat(text: string): FormatResult {
  const repairs: string[] = [];
  let repaired = fencesToTags(text, repairs);
  repaired = closeCodeBeforeOutput(repaired, repairs);
  repaired = closeThink(repaired, repairs);
  const parsed = parseResponse(repaired, markup);
  if (parsed.issues.length > 0) {
    return {
      status: 'drop',
      reason: 'format-unrepairable',
      detail: parsed.issues.map((issue) => `${issue.kind} ${issue.markup} at ${issue.at}`),
    };
  }
  if (!parsed.parts.some((part) => part.kind === 'code'))
    return { status: 'drop', reason: 'no-tool-call', detail: null };
  if (parsed.answer === null) return { status: 'drop', reason: 'no-answer', detail: null };
  return { status: 'ok', text: repaired, repairs };
}
