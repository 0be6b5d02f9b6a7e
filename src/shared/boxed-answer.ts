/**
 * The one `\boxed{}` reader: the content of the last closed `\boxed{…}` / `\fbox{…}` in a text,
 * found with one linear pass of brace matching (nested braces; escaped braces `\{ \}` do not
 * count), so a megabyte of deeply nested braces costs one pass. `\boxed 5` (one bare token
 * without braces) is accepted too. An unclosed last box is skipped in favour of the previous
 * closed one. The agent's final answer (protocol's prose-only answer) and the grader's
 * extraction both read boxes through this.
 */

/** The last closed box: its content (untrimmed) and where its command starts; null when none. */
export function lastBox(text: string): { content: string; start: number } | null {
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
      if (end !== -1) return { content: text.slice(position + 1, end), start: command.index };
    } else {
      const token = /^ ?([^\s${}]+)/.exec(text.slice(command.index + command[0].length, position + 200));
      if (token?.[1]) return { content: token[1], start: command.index };
    }
  }
  return null;
}

/** The trimmed content of the last closed `\boxed{}` / `\fbox{}`, or null when there is none. */
export function extractBoxedAnswer(text: string): string | null {
  return lastBox(text)?.content.trim() ?? null;
}
