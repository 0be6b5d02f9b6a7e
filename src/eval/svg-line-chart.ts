/**
 * A small line chart rendered to an inline SVG string: numeric x (a training step), one
 * polyline per series with a dot at every point, gaps where a value is missing (null), round
 * ticks on both axes (fractions too: accuracy in [0, 1], entropy below 1), a legend when there
 * is more than one series, and a `<title>` tooltip on every point. No scripts or resources.
 */
import { escapeHtml } from './escape-html.ts';
import { chartSvg, SERIES_COLORS, seriesLegend } from './svg-bar-chart.ts';

export type LinePoint = { x: number; y: number | null };
export type LineSeries = { name: string; points: readonly LinePoint[] };

export type LineChartOptions = {
  title: string;
  series: readonly LineSeries[];
  xLabel?: string;
  yLabel?: string;
  /** Fixed y range (default from the data, starting at 0 unless a value is negative). */
  yMin?: number;
  yMax?: number;
  formatValue?: (value: number) => string;
  width?: number;
  height?: number;
};

const MARGIN = { top: 40, right: 16, bottom: 40, left: 60 };

/** The chart as an `<svg>` element string. */
export function lineChart({
  title,
  series,
  xLabel = '',
  yLabel = '',
  yMin,
  yMax,
  formatValue = (value) => String(Math.round(value * 1000) / 1000),
  width = 540,
  height = 280,
}: LineChartOptions): string {
  const legend = series.length > 1 ? 22 : 0;
  const plotWidth = width - MARGIN.left - MARGIN.right;
  const plotHeight = height - MARGIN.top - MARGIN.bottom - legend;
  const xs = series.flatMap((entry) => entry.points.map((point) => point.x));
  const ys = series.flatMap((entry) =>
    entry.points.flatMap((point) => (point.y === null || !Number.isFinite(point.y) ? [] : [point.y])),
  );
  const xLow = xs.length === 0 ? 0 : Math.min(...xs);
  const xHigh = xs.length === 0 ? 1 : Math.max(...xs);
  const low = yMin ?? Math.min(0, ...ys);
  const yStep = roundStep(((yMax ?? Math.max(low + 1e-9, ...ys)) - low) / 4);
  const high = yMax ?? low + yStep * Math.max(1, Math.ceil((Math.max(low, ...ys) - low) / yStep - 1e-9));
  const xSpan = xHigh - xLow || 1;
  const ySpan = high - low || 1;
  const x = (value: number) => MARGIN.left + ((value - xLow) / xSpan) * plotWidth;
  const y = (value: number) => MARGIN.top + plotHeight - ((value - low) / ySpan) * plotHeight;

  const parts: string[] = [
    `<text x="${width / 2}" y="22" class="chart-title" text-anchor="middle">${escapeHtml(title)}</text>`,
  ];
  const ticks = Math.round(ySpan / yStep);
  for (let index = 0; index <= ticks; index++) {
    const tick = low + index * yStep;
    const ty = y(tick).toFixed(1);
    parts.push(
      `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${ty}" y2="${ty}" class="grid"/>`,
      `<text x="${MARGIN.left - 6}" y="${ty}" dy="4" text-anchor="end" class="tick">${escapeHtml(formatValue(tick))}</text>`,
    );
  }
  const xStep = Math.max(1, roundStep(xSpan / 8));
  for (let tick = Math.ceil(xLow / xStep) * xStep; tick <= xHigh + 1e-9; tick += xStep) {
    parts.push(
      `<text x="${x(tick).toFixed(1)}" y="${MARGIN.top + plotHeight + 16}" text-anchor="middle" class="tick">${tick}</text>`,
    );
  }
  parts.push(
    `<line x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${MARGIN.top + plotHeight}" y2="${MARGIN.top + plotHeight}" class="axis"/>`,
  );
  if (xLabel !== '') {
    parts.push(
      `<text x="${MARGIN.left + plotWidth / 2}" y="${MARGIN.top + plotHeight + 32}" text-anchor="middle" class="axis-label">${escapeHtml(xLabel)}</text>`,
    );
  }
  if (yLabel !== '') {
    const cy = MARGIN.top + plotHeight / 2;
    parts.push(
      `<text x="14" y="${cy}" transform="rotate(-90 14 ${cy})" text-anchor="middle" class="axis-label">${escapeHtml(yLabel)}</text>`,
    );
  }
  series.forEach((entry, index) => {
    const color = SERIES_COLORS[index % SERIES_COLORS.length];
    // Missing values split the line into runs.
    let run: string[] = [];
    const flush = () => {
      if (run.length > 1) {
        parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${run.join(' ')}"/>`);
      }
      run = [];
    };
    for (const point of [...entry.points].sort((a, b) => a.x - b.x)) {
      if (point.y === null || !Number.isFinite(point.y)) {
        flush();
        continue;
      }
      const px = x(point.x).toFixed(1);
      const py = y(Math.min(high, Math.max(low, point.y))).toFixed(1);
      run.push(`${px},${py}`);
      parts.push(
        `<circle cx="${px}" cy="${py}" r="2.5" fill="${color}"><title>${escapeHtml(`${entry.name} · ${point.x}: ${formatValue(point.y)}`)}</title></circle>`,
      );
    }
    flush();
  });
  parts.push(seriesLegend(series, MARGIN.left, height - 8));
  return chartSvg(title, width, height, parts);
}

/** A round step (1, 2 or 5 times a power of ten, fractions included) at or above `value`. */
export function roundStep(value: number): number {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const multiple of [1, 2, 5]) if (multiple * power >= value - 1e-12) return multiple * power;
  return 10 * power;
}
