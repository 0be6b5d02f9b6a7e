import { describe, expect, it } from 'vitest';
import { resumeCommand } from './resume-command.ts';

describe('resumeCommand', () => {
  it('keeps every option the user gave (--model included), with --out DIR --resume once', () => {
    expect(
      resumeCommand(
        ['train', 'sft', '--model', 'models/q', '--data', 'd.jsonl', '--out', 'run', '--steps', '6'],
        '/abs/run',
      ),
    ).toBe('agentmath train sft --model models/q --data d.jsonl --steps 6 --out /abs/run --resume');
    expect(resumeCommand(['eval', '--out=old', '--resume', '--bench', 'a b'], '/r')).toBe(
      "agentmath eval --bench 'a b' --out /r --resume",
    );
  });
});
