import { describe, expect, it } from 'vitest';
import type { ExecutionOutcome } from '../sandbox/types.ts';
import { callsToReplay } from './trajectory-session.ts';

const call = (code: string, outcome: ExecutionOutcome) => ({ code, outcome, ms: 1 });
const ok: ExecutionOutcome = { status: 'ok', stdout: '', stderr: '', ms: 1 };

describe('callsToReplay', () => {
  it('replays calls after the last reset, skipping empty code and timeouts', () => {
    const calls = [
      call('a = 1', ok),
      call('crash()', { status: 'killed', reason: 'lost' }),
      call('b = 2', ok),
      call('', ok),
      call('while True: pass', { status: 'timeout', stdout: '', limitMs: 10 }),
      call('c = b + 1', { status: 'error', stdout: '', stderr: '', exception: 'x', ms: 1 }),
    ];
    expect(callsToReplay(calls).map((entry) => entry.code)).toEqual(['b = 2', 'c = b + 1']);
  });

  it('treats running out of memory as a reset', () => {
    const calls = [
      call('a = 1', ok),
      call('big()', { status: 'memory-exceeded', limitBytes: 1 }),
      call('d = 4', ok),
    ];
    expect(callsToReplay(calls).map((entry) => entry.code)).toEqual(['d = 4']);
  });
});
