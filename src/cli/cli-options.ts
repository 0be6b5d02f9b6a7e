/**
 * The one place where command-line option values are parsed and range-checked, so every
 * command reports a bad value the same way and before it starts any process (worker, jail,
 * engine). A parser is a commander `argParser`: it throws commander's `InvalidArgumentError`,
 * which commander prints as `error: option '--port <n>' argument '99999' is invalid. expected
 * an integer in 0..65535`, and `main.ts` turns every such usage error into exit status 2.
 *
 * API (for every command, including new ones):
 *   .option('--steps <n>', 'optimizer steps', integerOption({ min: 1 }), 800)
 *   .option('--top-p <p>', 'nucleus sampling', numberOption({ min: 0, minExclusive: true, max: 1 }))
 *   .option('--port <n>', 'port (0 picks a free one)', portOption, 30000)
 *   .option('--host <host>', 'address to bind', hostOption, '127.0.0.1')
 *   .option('--levels <list>', 'levels', listOption(integerOption({ min: 1, max: 4 })))
 *   .option('--engine-timeout-ms <ms>', describeDefault('…', defaultOf(engineOptionsSchema, 'timeoutMs')), …)
 * - `integerOption({ min, max })`: a whole number in [min, max] (default min 0, max 2^31-1, so
 *   that `-k 99999999999` is refused instead of allocating until the machine runs out of memory).
 * - `numberOption({ min, max, minExclusive })`: a finite number in range.
 * - `portOption`, `hostOption`: a TCP port 0..65535; an IP address or a host name.
 * - `httpUrlOption`: an http:// or https:// URL (a server's base URL).
 * - `existingFolderOption`: a path that is an existing folder (`--tokenizer DIR`), so a file or
 *   a typo is refused naming the option instead of failing later as ENOTDIR.
 * - `collectHttpUrls`: for `--engine <url...>`, an option given once with several URLs
 *   (`--engine A B`), repeated (`--engine A --engine B`), or both: every URL, in order. Only for
 *   commands without positional arguments (a variadic option takes the words that follow it);
 *   a word that is not a URL is refused, never taken silently.
 * - `listOption(parser)`: comma-separated values, each parsed by `parser`.
 * - `choiceOption([...])`: one of the given words; `main.ts` calls `showChoicesInHelp` so
 *   `--help` lists them.
 * - `defaultOf(schema, key)`: the default a zod object schema gives `key`, so that `--help`
 *   shows the value the code really uses and cannot drift from it.
 * - `usageError(message)`: an error for a bad combination of options found in an action;
 *   `main.ts` prints it and exits with status 2 (code `CLI_BAD_OPTION`).
 */
import { existsSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { type Command, InvalidArgumentError } from 'commander';
import type { z } from 'zod';
import { SANDBOX_MODULE_NAME } from '../sandbox/index.ts';
import { AgentMathError } from '../shared/agentmath-error.ts';

/** The code of an error that means "the command line was wrong" (exit status 2). */
export const CLI_USAGE_CODE = 'CLI_BAD_OPTION';

/** The largest integer an option accepts unless it says otherwise. */
export const MAX_OPTION_INTEGER = 2 ** 31 - 1;

/** `multipleOf`: the value must divide by it (`model init --hidden`, a multiple of 16). */
export type IntegerRange = { min?: number; max?: number; multipleOf?: number };
export type NumberRange = { min?: number; max?: number; minExclusive?: boolean };

/** An error for a bad option found after parsing; exit status 2. */
export function usageError(message: string): AgentMathError {
  return new AgentMathError(CLI_USAGE_CODE, message);
}

function describeRange(kind: string, min: number | undefined, max: number | undefined, minExclusive = false) {
  if (min !== undefined && max !== undefined && !minExclusive) return `${kind} in ${min}..${max}`;
  const parts: string[] = [];
  if (min !== undefined) parts.push(`${minExclusive ? '>' : '>='} ${min}`);
  if (max !== undefined) parts.push(`<= ${max}`);
  return parts.length === 0 ? kind : `${kind} ${parts.join(' and ')}`;
}

/** A finite number written in plain decimal or exponent notation (no hex, no blanks). */
function toNumber(value: string): number | null {
  const text = value.trim();
  if (text === '' || !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(text)) return null;
  const parsed = Number(text);
  return Number.isFinite(parsed) ? parsed : null;
}

/** A commander parser for a whole number in [min, max]. */
export function integerOption(range: IntegerRange = {}): (value: string) => number {
  const min = range.min ?? 0;
  const max = range.max ?? MAX_OPTION_INTEGER;
  const multipleOf = range.multipleOf ?? 1;
  const expected = `expected ${describeRange(multipleOf === 1 ? 'an integer' : `a multiple of ${multipleOf}`, min, max)}`;
  return (value: string) => {
    const parsed = toNumber(value);
    if (
      parsed === null ||
      !Number.isInteger(parsed) ||
      parsed < min ||
      parsed > max ||
      parsed % multipleOf !== 0
    )
      throw new InvalidArgumentError(expected);
    return parsed;
  };
}

/** A commander parser for a finite number in range. */
export function numberOption(range: NumberRange = {}): (value: string) => number {
  const { min, max, minExclusive = false } = range;
  const expected = `expected ${describeRange('a number', min, max, minExclusive)}`;
  return (value: string) => {
    const parsed = toNumber(value);
    if (
      parsed === null ||
      (min !== undefined && (minExclusive ? parsed <= min : parsed < min)) ||
      (max !== undefined && parsed > max)
    )
      throw new InvalidArgumentError(expected);
    return parsed;
  };
}

/** A TCP port; 0 asks the system for a free one. */
export const portOption = integerOption({ min: 0, max: 65_535 });

/** An IPv4/IPv6 address or a host name (letters, digits, dots, hyphens). */
export function hostOption(value: string): string {
  const name =
    /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
  if (isIP(value) === 0 && !name.test(value))
    throw new InvalidArgumentError('expected an IP address (127.0.0.1, ::1, 0.0.0.0) or a host name');
  return value;
}

/** An `http://` or `https://` URL (a server's base URL), kept as written. */
export function httpUrlOption(value: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    const meant = value.includes('://') ? 'e.g. http://127.0.0.1:30000' : `e.g. http://${value}`;
    throw new InvalidArgumentError(`expected an http:// or https:// URL, ${meant}`);
  }
  return value;
}

/** A path that exists and is a folder, kept as written. */
export function existingFolderOption(value: string): string {
  if (!existsSync(value)) throw new InvalidArgumentError('no such folder');
  if (!statSync(value).isDirectory())
    throw new InvalidArgumentError('it is a file; give the folder that holds it');
  return value;
}

/** Collects every URL of a variadic, repeatable option (`--engine <url...>`), in order. */
export function collectHttpUrls(value: string, previous: string[] = []): string[] {
  return [...previous, httpUrlOption(value)];
}

/** A comma-separated list, each item parsed by `item`. */
export function listOption<T>(item: (value: string) => T): (value: string) => T[] {
  return (value: string) => {
    const items = value.split(',').map((part) => part.trim());
    if (items.some((part) => part === ''))
      throw new InvalidArgumentError('expected a comma-separated list without empty items');
    return items.map((part) => item(part));
  };
}

/** `--sandbox-preload`: comma-separated module names, or `none` for none. */
export function sandboxPreloadOption(value: string): string[] {
  if (value.trim() === 'none') return [];
  return listOption((name) => {
    if (!SANDBOX_MODULE_NAME.test(name)) throw new InvalidArgumentError(`"${name}" is not a module name`);
    return name;
  })(value);
}

/** The help of `--sandbox-preload`, for every command that has it. */
export const SANDBOX_PRELOAD_HELP =
  'modules a local sandbox worker imports before its session, comma-separated, or none (default: sympy,numpy,scipy); a worker serves one trajectory, so an import its code never uses costs every trajectory about half a second of a core';

/** A parser that accepts one of a list of words, and says which (for `--help`). */
export type ChoiceParser<T extends string> = ((value: string) => T) & { readonly choices: readonly T[] };

/** One of the given words; `--help` lists them (see `showChoicesInHelp`). */
export function choiceOption<const T extends string>(choices: readonly T[]): ChoiceParser<T> {
  const parse = (value: string) => {
    if (!(choices as readonly string[]).includes(value))
      throw new InvalidArgumentError(`expected one of ${choices.join(', ')}`);
    return value as T;
  };
  return Object.assign(parse, { choices });
}

/**
 * Makes `--help` show "(choices: …)" for every option parsed by `choiceOption`, in `command`
 * and its subcommands (commander shows choices only for options built with `.choices()`).
 */
export function showChoicesInHelp(command: Command): void {
  for (const option of command.options) {
    const choices = (option.parseArg as Partial<ChoiceParser<string>> | undefined)?.choices;
    if (choices !== undefined && option.argChoices === undefined) option.argChoices = [...choices];
  }
  for (const sub of command.commands) showChoicesInHelp(sub);
}

/** The default that a zod object schema gives `key` (read from the schema, never retyped). */
export function defaultOf<S extends z.ZodObject, K extends keyof z.infer<S> & string>(
  schema: S,
  key: K,
): z.infer<S>[K] {
  const field = schema.shape[key] as z.ZodType | undefined;
  if (field === undefined) throw new Error(`defaultOf: the schema has no field "${key}"`);
  const parsed = field.safeParse(undefined);
  if (!parsed.success || parsed.data === undefined)
    throw new Error(`defaultOf: the schema gives "${key}" no default`);
  return parsed.data as z.infer<S>[K];
}
