/**
 * Reading a text input the Unix way: `-` is standard input, a UTF-8 byte-order mark at the
 * start is dropped (editors on Windows write one), and a missing path or a folder is an error
 * that names the path (code `INPUT_NOT_FOUND` / `INPUT_IS_FOLDER`).
 */
import { createReadStream, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { AgentMathError } from './agentmath-error.ts';

/** The name `-` stands for standard input wherever a file is read. */
export const STDIN_PATH = '-';
const BOM = '\uFEFF';

/** `text` without a leading byte-order mark. */
export function stripBom(text: string): string {
  return text.startsWith(BOM) ? text.slice(1) : text;
}

/** Throws a clear error unless `path` is `-` or a readable file. */
export function assertReadableFile(path: string, what = 'input'): void {
  if (path === STDIN_PATH) return;
  let isFolder: boolean;
  try {
    isFolder = statSync(path).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new AgentMathError('INPUT_NOT_FOUND', `${what} ${path} does not exist`);
    throw new AgentMathError('INPUT_UNREADABLE', `${what} ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (isFolder) throw new AgentMathError('INPUT_IS_FOLDER', `${what} ${path} is a folder, not a file`);
}

/** A UTF-8 stream of the file (or standard input for `-`), its byte-order mark removed. */
export async function* readTextChunks(path: string, what = 'input'): AsyncGenerator<string> {
  assertReadableFile(path, what);
  const stream: Readable =
    path === STDIN_PATH ? process.stdin : createReadStream(path, { highWaterMark: 1 << 16 });
  stream.setEncoding('utf8');
  let first = true;
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      const text = first ? stripBom(chunk) : chunk;
      first = false;
      if (text !== '') yield text;
    }
  } finally {
    if (path !== STDIN_PATH) stream.destroy();
  }
}

/** The whole text of the file (or standard input for `-`), its byte-order mark removed. */
export async function readTextInput(path: string, what = 'input'): Promise<string> {
  let text = '';
  for await (const chunk of readTextChunks(path, what)) text += chunk;
  return text;
}

/** The lines of the file (or standard input), without their `\n` / `\r\n`; a last line without newline too. */
export async function* readTextLines(path: string, what = 'input'): AsyncGenerator<string> {
  let pending = '';
  for await (const chunk of readTextChunks(path, what)) {
    let start = 0;
    let newline = chunk.indexOf('\n');
    while (newline !== -1) {
      const line = pending + chunk.slice(start, newline);
      pending = '';
      yield line.endsWith('\r') ? line.slice(0, -1) : line;
      start = newline + 1;
      newline = chunk.indexOf('\n', start);
    }
    pending += chunk.slice(start);
  }
  if (pending !== '') yield pending;
}
