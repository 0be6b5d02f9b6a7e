/**
 * What keeps a path given as a model folder (`--model DIR`) from being one, said in words a
 * refusal can name: missing, a file, or a folder without `config.json`. Callers refuse with it
 * before any process starts (exit 2), instead of letting a worker or trainer find out later.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Null for a folder with a config.json; else what is wrong with `path`. */
export function modelFolderIssue(path: string): string | null {
  if (!existsSync(path)) return 'no such folder';
  if (!statSync(path).isDirectory()) return 'is a file, not a model folder';
  if (!existsSync(join(path, 'config.json'))) return 'no config.json in the folder: not a model folder';
  return null;
}
