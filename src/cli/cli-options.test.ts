import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  choiceOption,
  defaultOf,
  existingFolderOption,
  hostOption,
  httpUrlOption,
  integerOption,
  listOption,
  numberOption,
  portOption,
  showChoicesInHelp,
} from './cli-options.ts';

const rejects = (parse: (value: string) => unknown, value: string, expected: string) => {
  expect(() => parse(value)).toThrow(InvalidArgumentError);
  expect(() => parse(value)).toThrow(expected);
};

describe('option parsers', () => {
  it('integers: range, no fractions, no hex, no huge counts', () => {
    const k = integerOption({ min: 1 });
    expect(k('3')).toBe(3);
    rejects(k, '0', 'an integer in 1..2147483647');
    rejects(k, '99999999999', 'an integer in 1..2147483647');
    rejects(k, '1.5', 'an integer');
    rejects(k, '0x10', 'an integer');
    rejects(k, '', 'an integer');
    rejects(k, 'abc', 'an integer');
  });
  it('integers that must be a multiple (model init --hidden)', () => {
    const hidden = integerOption({ min: 32, max: 8192, multipleOf: 16 });
    expect(hidden('64')).toBe(64);
    rejects(hidden, '63', 'a multiple of 16 in 32..8192');
    rejects(hidden, '16', 'a multiple of 16 in 32..8192');
  });
  it('numbers: exclusive and inclusive bounds', () => {
    const topP = numberOption({ min: 0, minExclusive: true, max: 1 });
    expect(topP('0.95')).toBe(0.95);
    expect(topP('1')).toBe(1);
    rejects(topP, '0', 'a number > 0 and <= 1');
    rejects(topP, '1.01', 'a number > 0 and <= 1');
    rejects(topP, 'Infinity', 'a number');
    expect(numberOption({ min: 0 })('1e-3')).toBe(0.001);
  });
  it('ports and hosts', () => {
    expect(portOption('0')).toBe(0);
    rejects(portOption, '99999', 'an integer in 0..65535');
    expect(hostOption('0.0.0.0')).toBe('0.0.0.0');
    expect(hostOption('::1')).toBe('::1');
    expect(hostOption('node-1.example.org')).toBe('node-1.example.org');
    rejects(hostOption, 'not a host!', 'an IP address');
    rejects(hostOption, '300.1.1.1.', 'an IP address');
  });
  it('lists and choices', () => {
    expect(listOption(integerOption({ min: 1, max: 4 }))('1, 2,4')).toEqual([1, 2, 4]);
    rejects(listOption(integerOption({ min: 1, max: 4 })), '1,5', 'an integer in 1..4');
    rejects(listOption(integerOption()), '1,,2', 'without empty items');
    expect(choiceOption(['a', 'b'])('b')).toBe('b');
    rejects(choiceOption(['a', 'b']), 'c', 'one of a, b');
  });
  it('defaults come from the zod schema', () => {
    const schema = z.object({ steps: z.number().default(800), name: z.string().optional() }).strict();
    expect(defaultOf(schema, 'steps')).toBe(800);
    expect(() => defaultOf(schema, 'name')).toThrow('no default');
  });
});

describe('--help for enumerated options', () => {
  it('lists the words a choiceOption accepts, in subcommands too, and still parses with it', () => {
    const program = new Command().exitOverride();
    const sub = program.command('train').command('rl');
    sub.option('--mode <mode>', 'scheduling', choiceOption(['async', 'sync'] as const), 'async');
    showChoicesInHelp(program);
    expect(sub.helpInformation()).toMatch(/\(choices: "async", "sync", default: "async"\)/);
    sub.action(() => {});
    expect(() => program.parse(['node', 'x', 'train', 'rl', '--mode', 'fast'])).toThrow(
      /expected one of async, sync/,
    );
  });
});

describe('httpUrlOption', () => {
  it('keeps an http(s) URL as written and refuses anything else', () => {
    expect(httpUrlOption('http://127.0.0.1:30000/v1')).toBe('http://127.0.0.1:30000/v1');
    expect(httpUrlOption('https://api.openai.com')).toBe('https://api.openai.com');
    rejects(httpUrlOption, 'not-a-url', 'expected an http:// or https:// URL');
    rejects(httpUrlOption, 'ftp://host', 'expected an http:// or https:// URL, e.g. http://127.0.0.1:30000');
    rejects(httpUrlOption, 'localhost:31599', 'e.g. http://localhost:31599');
  });
});

describe('existingFolderOption', () => {
  it('keeps a folder and refuses a missing path or a file', () => {
    const folder = mkdtempSync(join(tmpdir(), 'agentmath-folder-option-'));
    try {
      writeFileSync(join(folder, 'tokenizer.json'), '{}');
      expect(existingFolderOption(folder)).toBe(folder);
      rejects(
        existingFolderOption,
        join(folder, 'tokenizer.json'),
        'it is a file; give the folder that holds it',
      );
      rejects(existingFolderOption, join(folder, 'missing'), 'no such folder');
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
