import { describe, expect, it } from 'vitest';
import { createProgressReporter, formatDuration, formatProgress } from './progress-reporter.ts';

const progress = (done: number, extra: Partial<Parameters<typeof formatProgress>[0]> = {}) => ({
  done,
  total: 20,
  doneAtStart: 0,
  correct: Math.floor(done / 2),
  codeCalls: done * 3,
  running: 2,
  failed: 0,
  gradeUnavailable: 0,
  ...extra,
});

describe('formatProgress', () => {
  it('shows counts, accuracy, code calls per trajectory and ETA from this invocation', () => {
    const line = formatProgress(progress(5), 10_000, 10);
    expect(line).toBe('███░░░░░░░ 5/20 25% | acc 40.0% | code/traj 3.00 | running 2 | ETA 30s');
    // 10 resumed, 5 new in 50 s: 10 s each, 5 left.
    expect(formatProgress(progress(15, { doneAtStart: 10, correct: 6 }), 50_000, 10)).toContain('ETA 50s');
    expect(formatProgress(progress(0), 0, 10)).toContain('acc – | code/traj – | running 2 | ETA ?');
    expect(formatProgress(progress(4, { failed: 3 }), 1000, 10)).toContain('| running 2 | failed 3 | ETA');
    // Grades without a verdict are apart from the accuracy: 2 correct of 4 with a verdict.
    expect(formatProgress(progress(5, { correct: 2, gradeUnavailable: 1 }), 1000, 10)).toContain(
      'acc 50.0% | code/traj 3.00 | running 2 | no verdict 1 |',
    );
  });

  it('formats durations', () => {
    expect(formatDuration(42_000)).toBe('42s');
    expect(formatDuration(185_000)).toBe('3m05s');
    expect(formatDuration(3_720_000)).toBe('1h02m');
  });
});

describe('createProgressReporter', () => {
  it('prints one plain line per step when not a terminal', () => {
    const written: string[] = [];
    const reporter = createProgressReporter({
      stream: { write: (text: string) => written.push(text) },
      isTTY: false,
      everyPercent: 25,
      now: () => 0,
    });
    for (let done = 0; done <= 20; done++) reporter.update(progress(done));
    reporter.finish();
    expect(written.map((line) => line.split(' ')[1])).toEqual(['0/20', '5/20', '10/20', '15/20', '20/20']);
    expect(written.every((line) => line.endsWith('\n') && !line.includes('\r'))).toBe(true);
  });

  it('redraws one line on a terminal', () => {
    const written: string[] = [];
    const reporter = createProgressReporter({
      stream: { write: (text: string) => written.push(text) },
      isTTY: true,
      now: () => 0,
    });
    reporter.update(progress(1));
    reporter.update(progress(2));
    reporter.finish();
    expect(written).toHaveLength(3);
    expect(written[0]?.startsWith('\r\u001b[2K')).toBe(true);
    expect(written[2]).toBe('\n');
  });
});
