/**
 * A small grouped bar chart rendered to an inline SVG string: one group per category, one bar
 * per series, a y axis with round ticks, a legend when there is more than one series, and a
 * `<title>` tooltip on every bar. No scripts, fonts or external resources.
 */
import { escapeHtml } from './escape-html.ts';

export type BarSeries = { name: string; values: readonly number[] };

export type BarChartOptions = {
  title: string;
  categories: readonly string[];
  series: readonly BarSeries[];
  /** Top of the y axis; defaults to a round number above the largest value. */
  yMax?: number;
  yLabel?: string;
  formatValue?: (value: number) => string;
  width?: number;
  height?: number;
};

/** Colours of the series, in order (distinct under common colour-vision deficiencies). */
export const SERIES_COLORS = ['#2f6db5', '#e08a1e', '#3a9a5b', '#b54a7f'] as const;

const MARGIN = { top: 40, right: 16, bottom: 0, left: 56 };

/** The chart as an `<svg>` element string. */
export function barChart({
  title,
  categories,
  series,
  yMax,
  yLabel = '',
  formatValue = (value) => String(Math.round(value * 100) / 100),
  width = 760,
  height = 300,
}: BarChartOptions): string {
  const longest = Math.max(0, ...categories.map((category) => category.length));
  const rotate = categories.length > 12 || longest * categories.length * 7 > width - MARGIN.left;
  const bottom = rotate ? Math.min(110, 16 + longest * 6) : 34;
  const legend = series.length > 1 ? 22 : 0;
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const plotHeight = height - MARGIN.top - bottom - legend;
  const largest = Math.max(0, ...series.flatMap((entry) => entry.values));
  const step = yMax === undefined ? niceStep(largest / 4) : yMax / 4;
  const top = yMax ?? step * Math.max(1, Math.ceil(largest / step));
  const y = (value: number) => MARGIN.top + plotHeight - (top === 0 ? 0 : (value / top) * plotHeight);
  const groupWidth = plotWidth / Math.max(1, categories.length);
  const barWidth = Math.max(1, (groupWidth * 0.8) / Math.max(1, series.length));

  const parts: string[] = [];
  parts.push(
    `<text x="${width / 2}" y="22" class="chart-title" text-anchor="middle">${escapeHtml(title)}</text>`,
  );
  for (let tick = 0; tick <= top + step / 2; tick += step) {
    const ty = y(tick).toFixed(1);
    parts.push(
      `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${ty}" y2="${ty}" class="grid"/>`,
      `<text x="${MARGIN.left - 6}" y="${ty}" dy="4" text-anchor="end" class="tick">${escapeHtml(formatValue(tick))}</text>`,
    );
  }
  if (yLabel !== '') {
    const cy = MARGIN.top + plotHeight / 2;
    parts.push(
      `<text x="14" y="${cy}" transform="rotate(-90 14 ${cy})" text-anchor="middle" class="axis-label">${escapeHtml(yLabel)}</text>`,
    );
  }
  categories.forEach((category, index) => {
    const groupX = MARGIN.left + index * groupWidth + groupWidth * 0.1;
    series.forEach((entry, seriesIndex) => {
      const value = entry.values[index] ?? 0;
      const barTop = y(Math.min(value, top));
      const x = groupX + seriesIndex * barWidth;
      parts.push(
        `<rect x="${x.toFixed(1)}" y="${barTop.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${(MARGIN.top + plotHeight - barTop).toFixed(1)}" fill="${SERIES_COLORS[seriesIndex % SERIES_COLORS.length]}"><title>${escapeHtml(`${entry.name} · ${category}: ${formatValue(value)}`)}</title></rect>`,
      );
    });
    const labelX = MARGIN.left + (index + 0.5) * groupWidth;
    const labelY = MARGIN.top + plotHeight + 14;
    parts.push(
      rotate
        ? `<text x="${labelX.toFixed(1)}" y="${labelY}" transform="rotate(-50 ${labelX.toFixed(1)} ${labelY})" text-anchor="end" class="tick">${escapeHtml(category)}</text>`
        : `<text x="${labelX.toFixed(1)}" y="${labelY}" text-anchor="middle" class="tick">${escapeHtml(category)}</text>`,
    );
  });
  parts.push(
    `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${y(0)}" y2="${y(0)}" class="axis"/>`,
  );
  parts.push(seriesLegend(series, MARGIN.left, height - 8));
  return chartSvg(title, width, height, parts);
}

/** One swatch and name per series along a line at `y` (nothing for a single series). */
export function seriesLegend(series: readonly { name: string }[], left: number, y: number): string {
  if (series.length < 2) return '';
  let x = left;
  return series
    .map((entry, index) => {
      const swatch = `<rect x="${x}" y="${y - 10}" width="12" height="12" fill="${SERIES_COLORS[index % SERIES_COLORS.length]}"/><text x="${x + 16}" y="${y}" class="legend">${escapeHtml(entry.name)}</text>`;
      x += 28 + entry.name.length * 7;
      return swatch;
    })
    .join('');
}

/** The `<svg>` element around a chart's parts. */
export function chartSvg(title: string, width: number, height: number, parts: readonly string[]): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(title)}">${parts.join('')}</svg>`;
}

/** A round tick step at or above `value`: 1, 2 or 5 times a power of ten, never below 1. */
export function niceStep(value: number): number {
  if (value <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const multiple of [1, 2, 5]) if (multiple * power >= value) return multiple * power;
  return 10 * power;
}
