/**
 * Final-answer extraction from a full model response or a bare answer: the last closed
 * `\boxed{…}` / `\fbox{…}` (one linear pass of brace matching, so a megabyte of unclosed
 * boxes costs one scan), then "the final answer is …" / "Answer: …", then a short response
 * taken as the answer itself.
 */

export type Extraction = { answer: string; source: 'boxed' | 'phrase' | 'bare' };

/** Responses longer than this are cut to their last part before extraction. */
export const MAX_RESPONSE_CHARS = 2_000_000;
/** A response this short, without a box or an answer phrase, is taken as a bare answer. */
const MAX_BARE_CHARS = 300;

/** The answer in a response, or null when there is none. */
export function extractAnswer(response: string): Extraction | null {
  const text = response.length > MAX_RESPONSE_CHARS ? response.slice(-MAX_RESPONSE_CHARS) : response;
  const boxed = lastBox(text);
  if (boxed !== null) return { answer: boxed.trim(), source: 'boxed' };
  const phrase = lastAnswerPhrase(text);
  if (phrase !== null) return { answer: phrase, source: 'phrase' };
  const bare = text.trim();
  if (bare !== '' && bare.length <= MAX_BARE_CHARS && !bare.includes('\n'))
    return { answer: bare, source: 'bare' };
  return null;
}

/** The content of the last closed box, found from one stack pass over the braces. */
function lastBox(text: string): string | null {
  if (!text.includes('\\boxed') && !text.includes('\\fbox')) return null;
  const closing = new Int32Array(text.length).fill(-1);
  const stack: number[] = [];
  for (let index = 0; index < text.length; index++) {
    const character = text.charCodeAt(index);
    if (character === 92 /* \ */) index++;
    else if (character === 123 /* { */) stack.push(index);
    else if (character === 125 /* } */) {
      const open = stack.pop();
      if (open !== undefined) closing[open] = index;
    }
  }
  const commands = [...text.matchAll(/\\(?:boxed|fbox)(?![A-Za-z])/g)];
  for (let index = commands.length - 1; index >= 0; index--) {
    const command = commands[index]!;
    let position = command.index + command[0].length;
    while (text[position] === ' ' || text[position] === '\t') position++;
    if (text[position] === '{') {
      const end = closing[position]!;
      if (end !== -1) return text.slice(position + 1, end);
    } else {
      const token = /^ ?([^\s${}]+)/.exec(text.slice(command.index + command[0].length, position + 200));
      if (token?.[1]) return token[1];
    }
  }
  return null;
}

const PHRASES = /(?:final answer|the answer)\s*(?:is|:|=)\s*:?\s*([^\n]+)|\banswer\s*:\s*([^\n]+)/gi;

function lastAnswerPhrase(text: string): string | null {
  const tail = text.slice(-20_000);
  let last: string | null = null;
  for (const match of tail.matchAll(PHRASES)) last = match[1] ?? match[2] ?? null;
  if (last === null) return null;
  let answer = last.trim();
  // `$x$.` / `\(x\)` wrappers, then sentence punctuation.
  const math = /^\$+([^$]+)\$+|^\\\((.+?)\\\)/.exec(answer);
  if (math) answer = (math[1] ?? math[2]!).trim();
  else answer = answer.replace(/\.\s.*$/, '');
  answer = answer.replace(/[.\s]+$/, '').trim();
  return answer === '' ? null : answer.slice(0, 1_000);
}
