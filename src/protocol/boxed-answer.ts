/**
 * Final-answer extraction: the content of the last `\boxed{…}` or `\fbox{…}` in a text, with
 * brace matching (nested braces, escaped braces `\{ \}`). `\boxed 5` (a single token without
 * braces) is accepted too. An unclosed last box is skipped in favour of the previous closed one.
 */

const BOX_COMMANDS = ['\\boxed', '\\fbox'] as const;

/** Every box in order of appearance, each with its content and where it starts. */
export function findBoxes(text: string): { content: string; start: number }[] {
  const boxes: { content: string; start: number }[] = [];
  let index = 0;
  while (index < text.length) {
    const next = nextBoxCommand(text, index);
    if (next === null) break;
    const { start, afterCommand } = next;
    const content = readBoxArgument(text, afterCommand);
    if (content !== null) boxes.push({ content: content.value, start });
    index = content === null ? afterCommand : content.end;
  }
  return boxes;
}

/** The content of the last closed `\boxed{}` / `\fbox{}`, trimmed, or null when there is none. */
export function extractBoxedAnswer(text: string): string | null {
  const boxes = findBoxes(text);
  const last = boxes[boxes.length - 1];
  return last === undefined ? null : last.content.trim();
}

function nextBoxCommand(text: string, from: number): { start: number; afterCommand: number } | null {
  let best: { start: number; afterCommand: number } | null = null;
  for (const command of BOX_COMMANDS) {
    let position = text.indexOf(command, from);
    // `\boxedx` is another command; require a non-letter after the name.
    while (position !== -1 && /[A-Za-z]/.test(text.charAt(position + command.length))) {
      position = text.indexOf(command, position + 1);
    }
    if (position !== -1 && (best === null || position < best.start)) {
      best = { start: position, afterCommand: position + command.length };
    }
  }
  return best;
}

function readBoxArgument(text: string, from: number): { value: string; end: number } | null {
  let index = from;
  while (index < text.length && (text[index] === ' ' || text[index] === '\t')) index++;
  if (text[index] !== '{') {
    // `\boxed 5`: one bare token up to whitespace or `$`.
    const match = /^ ?([^\s${}]+)/.exec(text.slice(from, from + 200));
    return match?.[1] ? { value: match[1], end: from + match[0].length } : null;
  }
  let depth = 0;
  for (let position = index; position < text.length; position++) {
    const character = text[position];
    if (character === '\\') {
      position++; // skip the escaped character, so `\{` and `\}` do not count
      continue;
    }
    if (character === '{') depth++;
    else if (character === '}') {
      depth--;
      if (depth === 0) return { value: text.slice(index + 1, position), end: position + 1 };
    }
  }
  return null;
}
