/**
 * The report in a real browser: headless Chromium renders report.html built from fixture runs,
 * takes a screenshot (decoded here and checked for drawn content), and dumps the DOM after
 * rendering (checked for the SVG charts and bars).
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchmarkProblem } from '../src/eval/benchmark-problem.ts';
import { writeRunReport } from '../src/eval/run-report.ts';
import { summarizeRun } from '../src/eval/run-summary.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import { type FixtureCall, fixtureTrajectory } from './eval-fixtures.ts';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT_ARGS = ['--window-size=1200,2000'];

let root: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'agentmath-report-'));
  await writeFixtureRun(join(root, 'baseline'), 0);
  await writeFixtureRun(join(root, 'tuned'), 1);
});
// AGENTMATH_KEEP_REPORT=DIR keeps the report and its screenshot for a person to look at.
afterAll(() => {
  if (process.env.AGENTMATH_KEEP_REPORT) cpSync(root, process.env.AGENTMATH_KEEP_REPORT, { recursive: true });
  rmSync(root, { recursive: true, force: true });
});

/** `count` problems × 4 samples; `shift` makes the second run better and more tool-happy. */
async function writeFixtureRun(folder: string, shift: number, count = 12): Promise<void> {
  mkdirSync(folder, { recursive: true });
  const problems: BenchmarkProblem[] = Array.from({ length: count }, (_, index) => ({
    id: `fx-${String(index + 1).padStart(count > 99 ? 3 : 2, '0')}`,
    problem: `problem ${index}`,
    answer: String(index * 7),
  }));
  const trajectories: Trajectory[] = [];
  problems.forEach((problem, index) => {
    for (let sample = 0; sample < 4; sample++) {
      const correct = (index + sample + shift) % 3 !== 0;
      const calls: FixtureCall[] = Array.from({ length: (index + sample * shift) % 5 }, (_, call) =>
        call === 0 && sample % 2 === 1 ? 'error' : 'ok',
      );
      trajectories.push(
        fixtureTrajectory({
          problemId: problem.id,
          sample,
          answer: correct ? problem.answer : sample === 3 ? null : '1',
          calls,
          text: `${'reasoning '.repeat(10 + (index % 12) * 9 + sample * 5)}\\boxed{${correct ? problem.answer : '1'}}`,
          ...(sample === 3 && !correct ? { finish: 'max-tokens' as const } : {}),
          grade: { reference: problem.answer, correct },
        }),
      );
    }
  });
  const summary = await summarizeRun({
    benchmark: 'fixture',
    problems,
    k: 4,
    trajectories,
    equivalent: (a, b) => a === b,
  });
  writeFileSync(
    join(folder, 'trajectories.jsonl'),
    trajectories.map((t) => `${JSON.stringify(t)}\n`).join(''),
  );
  writeFileSync(join(folder, 'summary.json'), JSON.stringify(summary));
  writeFileSync(
    join(folder, 'config.json'),
    JSON.stringify({ benchmark: 'fixture', k: 4, model: `m${shift}` }),
  );
}

/** Runs headless Chromium on a file; kills its process group whatever happens. */
async function chromium(args: string[], { timeoutMs = 90_000 } = {}): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), 'agentmath-chromium-'));
  const child = spawn(
    CHROMIUM,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      `--user-data-dir=${profile}`,
      ...args,
    ],
    { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const timer = setTimeout(() => killGroup(child.pid), timeoutMs);
  try {
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`chromium exited with ${code}: ${stderr.slice(-2000)}`);
    return stdout;
  } finally {
    clearTimeout(timer);
    killGroup(child.pid);
    rmSync(profile, { recursive: true, force: true });
  }
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** Decodes an 8-bit RGB/RGBA non-interlaced PNG into its size and pixels. */
function decodePng(bytes: Buffer): { width: number; height: number; channels: number; pixels: Uint8Array } {
  expect(bytes.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      expect(body[8]).toBe(8); // bit depth
      expect(body[12]).toBe(0); // not interlaced
      channels = body[9] === 6 ? 4 : body[9] === 2 ? 3 : 0;
      expect(channels).toBeGreaterThan(0);
    } else if (type === 'IDAT') data.push(body);
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = new Uint8Array(height * stride);
  for (let row = 0; row < height; row++) {
    const filter = raw[row * (stride + 1)];
    for (let column = 0; column < stride; column++) {
      const value = raw[row * (stride + 1) + 1 + column] ?? 0;
      const left = column >= channels ? (pixels[row * stride + column - channels] ?? 0) : 0;
      const up = row > 0 ? (pixels[(row - 1) * stride + column] ?? 0) : 0;
      const upLeft =
        row > 0 && column >= channels ? (pixels[(row - 1) * stride + column - channels] ?? 0) : 0;
      let predictor = 0;
      if (filter === 1) predictor = left;
      else if (filter === 2) predictor = up;
      else if (filter === 3) predictor = (left + up) >> 1;
      else if (filter === 4) {
        const estimate = left + up - upLeft;
        const [a, b, c] = [Math.abs(estimate - left), Math.abs(estimate - up), Math.abs(estimate - upLeft)];
        predictor = a <= b && a <= c ? left : b <= c ? up : upLeft;
      }
      pixels[row * stride + column] = (value + predictor) & 0xff;
    }
  }
  return { width, height, channels, pixels };
}

// Skipped on a machine without Chromium, but never in CI: setup installs it there.
describe.skipIf(!existsSync(CHROMIUM) && process.env.CI !== 'true')(
  'report.html in headless Chromium',
  () => {
    it('has Chromium (CI installs it; a missing browser fails instead of skipping)', () => {
      expect(existsSync(CHROMIUM), `Chromium not found at ${CHROMIUM}`).toBe(true);
    });

    it('renders a comparison report with visible charts', async () => {
      const report = await writeRunReport([join(root, 'baseline'), join(root, 'tuned')], {
        equivalent: (a, b) => a === b,
      });
      const html = readFileSync(report, 'utf8');
      // Self-contained: nothing fetched from anywhere.
      expect(html).not.toMatch(/<script|<link|@import|url\(|src=|https?:\/\/(?!www\.w3\.org\/2000\/svg)/);

      const screenshot = join(root, 'report.png');
      await chromium([...SCREENSHOT_ARGS, `--screenshot=${screenshot}`, `file://${report}`]);
      const image = decodePng(readFileSync(screenshot));
      expect([image.width, image.height]).toEqual([1200, 2000]);
      const colors = new Set<number>();
      let inked = 0;
      const blue = { r: 0x2f, g: 0x6d, b: 0xb5 };
      let bluePixels = 0;
      for (let index = 0; index < image.pixels.length; index += image.channels) {
        const [r, g, b] = [
          image.pixels[index] ?? 0,
          image.pixels[index + 1] ?? 0,
          image.pixels[index + 2] ?? 0,
        ];
        colors.add((r << 16) | (g << 8) | b);
        if (r + g + b < 600) inked++;
        if (Math.abs(r - blue.r) < 8 && Math.abs(g - blue.g) < 8 && Math.abs(b - blue.b) < 8) bluePixels++;
      }
      const total = image.width * image.height;
      expect(colors.size).toBeGreaterThan(50); // text antialiasing, two series colours, table shading
      expect(inked / total).toBeGreaterThan(0.02);
      expect(bluePixels).toBeGreaterThan(2000); // the first series' bars were painted

      const dom = await chromium(['--dump-dom', `file://${report}`]);
      const svgs = dom.match(/<svg[\s>]/g) ?? [];
      expect(svgs.length).toBe(4); // accuracy, code calls, length, finish reasons
      const bars = dom.match(/<rect [^>]*fill="#(2f6db5|e08a1e)"/g) ?? [];
      expect(bars.length).toBeGreaterThan(2 * 12);
      expect(dom).toContain('avg@k per problem');
      expect(dom).toContain('fx-12');
    }, 240_000);

    it('past a few dozen problems draws them by accuracy, not one unreadable label each', async () => {
      await writeFixtureRun(join(root, 'wide-baseline'), 0, 200);
      await writeFixtureRun(join(root, 'wide-tuned'), 1, 200);
      const report = await writeRunReport([join(root, 'wide-baseline'), join(root, 'wide-tuned')], {
        equivalent: (a, b) => a === b,
        outFile: join(root, 'wide-report.html'),
      });
      const screenshot = join(root, 'wide-report.png');
      await chromium([...SCREENSHOT_ARGS, `--screenshot=${screenshot}`, `file://${report}`]);
      const image = decodePng(readFileSync(screenshot));
      expect([image.width, image.height]).toEqual([1200, 2000]);

      const dom = await chromium(['--dump-dom', `file://${report}`]);
      const accuracy = /<svg[^>]*aria-label="problems by avg@k[^"]*"[\s\S]*?<\/svg>/.exec(dom)?.[0] ?? '';
      expect(accuracy).toContain('200 problems');
      expect(accuracy).not.toContain('fx-'); // no per-problem label in the chart
      const labels = [...accuracy.matchAll(/class="tick">([^<]*%)<\/text>/g)].map((match) => match[1]);
      expect(labels).toEqual(['0%', '0–20%', '20–40%', '40–60%', '60–80%', '80–100%', '100%']);
      // Every problem is still in the table, and the bars count every problem of each run.
      expect(dom).toContain('fx-001');
      expect(dom).toContain('fx-200');
      const counts = [...accuracy.matchAll(/<title>[^<]*: (\d+)<\/title>/g)].map((match) => Number(match[1]));
      expect(counts.slice(0, 14).reduce((sum, count) => sum + count, 0)).toBe(2 * 200);
    }, 240_000);
  },
);
