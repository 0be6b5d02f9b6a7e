import { describe, expect, it } from 'vitest';
import { renderOutcomeBody, tracebackTail, truncateMiddle } from './tool-result.ts';

// A real CPython 3.11 traceback, as the sandbox reports it.
const TRACEBACK = `Traceback (most recent call last):
  File "<cell>", line 7, in <module>
    print(f(0))
          ^^^^
  File "<cell>", line 5, in f
    return g(x)
           ^^^^
  File "<cell>", line 2, in g
    return 1 / x
           ~~^~~
ZeroDivisionError: division by zero`;

describe('truncateMiddle', () => {
  it('keeps head and tail and says how many characters were cut', () => {
    const text = `${'a'.repeat(50)}${'m'.repeat(900)}${'z'.repeat(50)}`;
    const cut = truncateMiddle(text, 100);
    expect(cut).toBe(`${'a'.repeat(50)}\n... [900 characters cut] ...\n${'z'.repeat(50)}`);
    expect(truncateMiddle('short', 100)).toBe('short');
  });
});

describe('renderOutcomeBody', () => {
  it('prints stdout and stderr, and says when there is no output', () => {
    expect(renderOutcomeBody({ status: 'ok', stdout: '1\n', stderr: 'Warning: x\n', ms: 1 })).toBe(
      '1\nWarning: x',
    );
    expect(renderOutcomeBody({ status: 'ok', stdout: '', stderr: '', ms: 1 })).toBe('(no output)');
  });

  it('truncates long output', () => {
    const body = renderOutcomeBody(
      { status: 'ok', stdout: 'x'.repeat(5000), stderr: '', ms: 1 },
      { maxChars: 200 },
    );
    expect(body).toContain('[4800 characters cut]');
    expect(body.length).toBeLessThan(300);
  });

  it('keeps the last lines of a traceback, its first line, and the output printed before', () => {
    const body = renderOutcomeBody(
      { status: 'error', stdout: 'step 1\n', stderr: '', exception: TRACEBACK, ms: 2 },
      { tracebackLines: 4 },
    );
    expect(body).toBe(
      [
        'step 1',
        'Traceback (most recent call last):',
        '  ... [6 lines cut] ...',
        '  File "<cell>", line 2, in g',
        '    return 1 / x',
        '           ~~^~~',
        'ZeroDivisionError: division by zero',
      ].join('\n'),
    );
    expect(tracebackTail(TRACEBACK, 20)).toBe(TRACEBACK);
  });

  it('explains timeouts, memory limits and killed sessions', () => {
    expect(renderOutcomeBody({ status: 'timeout', stdout: 'partial\n', limitMs: 10_000 })).toBe(
      'partial\nTimeoutError: the code ran longer than the 10 s limit and was stopped.',
    );
    expect(renderOutcomeBody({ status: 'memory-exceeded', limitBytes: 512 * 2 ** 20 })).toBe(
      'MemoryError: the code used more than the 512 MiB memory limit and was stopped.',
    );
    const killed = renderOutcomeBody({ status: 'killed', reason: 'worker crashed' });
    expect(killed).toContain('the Python session was killed (worker crashed)');
    expect(killed).toContain('Its state is gone');
    expect(killed).toContain('define them again');
  });
});
