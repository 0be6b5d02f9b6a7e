import { describe, expect, it } from 'vitest';
import { histogram } from './histogram.ts';
import { barChart, niceStep } from './svg-bar-chart.ts';

describe('barChart', () => {
  it('draws one bar per category and series, with a legend and escaped labels', () => {
    const svg = barChart({
      title: 'a <b> & c',
      categories: ['x', 'y', 'z'],
      series: [
        { name: 'one', values: [1, 2, 3] },
        { name: 'two', values: [3, 0, 1] },
      ],
    });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('a &lt;b&gt; &amp; c');
    expect(svg.match(/<rect [^>]*><title>/g)).toHaveLength(6);
    expect(svg).toContain('<title>two · x: 3</title>');
    expect(svg.match(/class="legend"/g)).toHaveLength(2);
    // Ticks 0..3 in steps of 1: the tallest bar reaches the top of the axis.
    expect(svg.match(/class="tick">\d+<\/text>/g)?.slice(0, 4)).toEqual([
      'class="tick">0</text>',
      'class="tick">1</text>',
      'class="tick">2</text>',
      'class="tick">3</text>',
    ]);
  });

  it('scales bars to yMax and leaves a single series without a legend', () => {
    const svg = barChart({
      title: 't',
      categories: ['a', 'b'],
      series: [{ name: 's', values: [1, 0.5] }],
      yMax: 1,
      height: 300,
    });
    const heights = [...svg.matchAll(/<rect [^>]*height="([\d.]+)"/g)].map((match) => Number(match[1]));
    expect(heights[0]).toBeCloseTo(2 * (heights[1] ?? 0), 0);
    expect(svg).not.toContain('class="legend"');
  });

  it('picks round steps', () => {
    expect([0.2, 1, 1.5, 2.5, 7, 12, 260].map(niceStep)).toEqual([1, 1, 2, 5, 10, 20, 500]);
  });
});

describe('histogram', () => {
  it('uses unit bins for small integers, shared across sets', () => {
    expect(
      histogram([
        [0, 1, 1, 3],
        [2, 2],
      ]),
    ).toEqual({
      labels: ['0', '1', '2', '3'],
      counts: [
        [1, 2, 0, 1],
        [0, 0, 2, 0],
      ],
    });
  });

  it('uses equal-width bins otherwise, the maximum in the last bin', () => {
    const result = histogram([[0, 50, 100, 1000]], { binCount: 4 });
    expect(result.labels).toEqual(['0', '250', '500', '750']);
    expect(result.counts).toEqual([[3, 0, 0, 1]]);
    expect(histogram([[]])).toEqual({ labels: [], counts: [[]] });
  });
});
