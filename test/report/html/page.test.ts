import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { buildReport } from '../../../src/report/build.js';
import { HEADER, generateRows } from '../../../src/report/history-generator.js';
import { reportHtml } from '../../../src/report/html/page.js';
import { runCli, tempDir } from '../../support/helpers.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const START = Date.UTC(2026, 10, 23);
/** Hours 30 to 33 of the trail: no GPU has a sample (the host's collector was down). */
const GAP = { from: 30, to: 33 };

/**
 * Per x column of a PNG screenshot of one chart: does it hold a pixel of the blue line (also blended
 * half into the white by anti-aliasing; the grey shading and gridlines are not blue)? Decoded by the
 * browser itself.
 */
async function columnsWithBlue(tab: Page, png: Buffer): Promise<boolean[]> {
  return tab.evaluate(
    async ({ data }) => {
      const image = new Image();
      image.src = `data:image/png;base64,${data}`;
      await image.decode();
      const canvas = document.createElement('canvas');
      canvas.width = image.width;
      canvas.height = image.height;
      const context = canvas.getContext('2d')!;
      context.drawImage(image, 0, 0);
      const pixels = context.getImageData(0, 0, image.width, image.height).data;
      return Array.from({ length: image.width }, (_, x) => {
        for (let y = 0; y < image.height; y++) {
          const i = (y * image.width + x) * 4;
          if (pixels[i + 2]! - pixels[i]! > 50 && pixels[i + 2]! > pixels[i + 1]!) return true;
        }
        return false;
      });
    },
    { data: png.toString('base64') },
  );
}

describe('the HTML report in headless Chromium', () => {
  // Three runs of the program and a browser: on a busy 2-core machine more than the default 30 s.
  it('breaks and shades a host-wide gap, reports it once, answers the fleet table, hovers, and never touches the network', async () => {
    const dir = await tempDir();
    const rows = generateRows({
      start: START,
      hours: 72,
      intervalSeconds: 120,
      gpus: ['busy', 'waiting', 'training', 'leak'],
      skip: (_gpu: number, h: number) => h >= GAP.from && h < GAP.to,
    });
    await writeFile(join(dir, 'train.csv'), `${HEADER}\n${rows.join('\n')}\n`);
    const page = join(dir, 'report.html');
    const result = await runCli(['report', '--csv-dir', dir, '--format', 'html', '--out', page], { TZ: 'UTC' });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const html = await readFile(page, 'utf8');
    // Self-contained: no URL to fetch, no external script, style or image.
    expect(html).not.toMatch(/https?:\/\/|\/\/[a-z0-9.-]+\.[a-z]{2,}\/|<link|src=/i);
    const json = await runCli(['report', '--csv-dir', dir, '--format', 'json', '--by', 'task'], { TZ: 'UTC' });
    const parsed = JSON.parse(json.stdout) as {
      summary: { gpu_hours: number; energy_kwh: number; missed_gpu_hours: number }[];
      findings: { kind: string; mib_per_day?: number; from_mib?: number; to_mib?: number }[];
    };
    const summary = parsed.summary[0]!;
    const growth = parsed.findings.find((f) => f.kind === 'memory_growth')!;
    const text = await runCli(['report', '--csv-dir', dir, '--format', 'table', '--by', 'task'], { TZ: 'UTC' });

    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    try {
      const tab = await browser.newPage({ viewport: { width: 1320, height: 900 } });
      const requests: string[] = [];
      tab.on('request', (request) => requests.push(request.url()));
      await tab.goto(pathToFileURL(page).href);

      // One finding per cause: the gap once for the host, the imbalance once; each links to charts that exist.
      const findings = await tab.$$eval('ul.findings li', (items) =>
        items.map((li) => ({ text: li.textContent ?? '', kind: li.className, target: li.querySelector('a')?.getAttribute('href') ?? '' })),
      );
      // The waiting GPU (5-13 % busy holding 49 GiB for three days) is a low_use finding of its own.
      expect(findings.map((f) => f.kind).sort()).toEqual(['collection_gaps', 'imbalance', 'low_use', 'memory_growth']);
      expect(findings.find((f) => f.kind === 'collection_gaps')!.text).toContain('every GPU missed');
      for (const f of findings) expect(await tab.locator(f.target).count()).toBe(1);
      // In the page's unit, GiB, as its charts and table are: the leak's numbers are the JSON's MiB / 1024.
      const pageFindings = [...findings.map((f) => f.text), ...(await tab.$$eval('p.finding', (ps) => ps.map((p) => p.textContent ?? '')))];
      expect(pageFindings.filter((f) => f.includes('MiB'))).toEqual([]);
      const gib = (mib: number) => (mib / 1024).toFixed(1);
      const grows = findings.find((f) => f.kind === 'memory_growth')!.text;
      expect(grows).toContain(`grows ${gib(growth.mib_per_day!)} GiB a day, `);
      expect(grows).toContain(` (${gib(growth.from_mib!)} to ${gib(growth.to_mib!)} GiB`);
      expect(await tab.locator('p.finding.imbalance').count()).toBe(1);

      // Charts: 2 overview charts with every GPU, 3 per GPU; each line broken at the gap into two stretches.
      const charts = await tab.$$eval('svg.chart', (svgs) =>
        svgs.map((svg) => {
          const data = JSON.parse(svg.getAttribute('data-chart')!) as {
            x0: number;
            step: number;
            left: number;
            plotWidth: number;
            gaps: number[];
          };
          const paths = [...svg.querySelectorAll('path.line')].map((p) => p.getAttribute('d') ?? '');
          const gapRects = [...svg.querySelectorAll('rect.gap')].map((r) => [Number(r.getAttribute('x')), Number(r.getAttribute('width'))]);
          const yTicks = [...svg.querySelectorAll('text.tick')].map((t) => t.textContent ?? '');
          return { id: svg.parentElement!.id, data, paths, gapRects, yTicks, gridlines: svg.querySelectorAll('line.grid').length };
        }),
      );
      expect(charts.map((c) => c.id).filter((id) => !id.includes('-gpu-'))).toEqual(['host-0-utilization', 'host-0-memory']);
      expect(charts).toHaveLength(2 + 4 * 3);
      for (const chart of charts) {
        const { x0, step, left, plotWidth, gaps } = chart.data;
        expect(x0).toBe(START);
        expect(step).toBe(3_600_000);
        const gapX = [left + (GAP.from / gaps.length) * plotWidth, left + (GAP.to / gaps.length) * plotWidth];
        expect(chart.gapRects).toHaveLength(1);
        expect(chart.gapRects[0]![0]).toBeCloseTo(gapX[0]!, 0);
        expect(chart.gapRects[0]![1]).toBeCloseTo(gapX[1]! - gapX[0]!, 0);
        expect(chart.paths.length).toBe(chart.id.includes('-gpu-') ? 1 : 4);
        for (const d of chart.paths) {
          expect(d.match(/M/g)).toHaveLength(2);
          const xs = [...d.matchAll(/[ML]([\d.]+),/g)].map((m) => Number(m[1]));
          expect(xs.filter((x) => x > gapX[0]! && x < gapX[1]!)).toEqual([]);
        }
        // Round ticks with units, day ticks and gridlines.
        expect(chart.yTicks.some((t) => /^(25 %|\d+ (GiB|W))$/.test(t))).toBe(true);
        expect(chart.yTicks).toContain('Tue 24 Nov');
        expect(chart.gridlines).toBeGreaterThan(6);
      }

      // As a person sees it: in the screenshot of GPU 0's utilization, the line's color is absent over the gap.
      const chart = tab.locator('#host-0-gpu-0-utilization svg');
      const png = await chart.screenshot();
      const box = (await chart.boundingBox())!;
      const { left, plotWidth } = charts.find((c) => c.id === 'host-0-gpu-0-utilization')!.data;
      const scale = box.width / 400;
      const columns = await columnsWithBlue(tab, png);
      const column = (hour: number) => Math.round((left + (hour / 72) * plotWidth) * scale);
      expect(columns.slice(column(GAP.from) + 3, column(GAP.to) - 2).some(Boolean)).toBe(false);
      expect(columns.slice(column(GAP.from - 3), column(GAP.from - 1)).every(Boolean)).toBe(true);
      expect(columns.slice(column(GAP.to + 1), column(GAP.to + 3)).every(Boolean)).toBe(true);

      // Hover: the value of the hour under the pointer, and the gap said in words.
      await tab.mouse.move(box.x + (left + (10.5 / 72) * plotWidth) * scale, box.y + box.height / 2);
      await expect.poll(() => tab.locator('.tip').textContent()).toMatch(/^Mon 23 Nov 10:00–11:00GPU 0: \d+(\.\d)? %$/);
      await tab.mouse.move(box.x + (left + (31.5 / 72) * plotWidth) * scale, box.y + box.height / 2);
      await expect.poll(() => tab.locator('.tip').textContent()).toContain('no samples (gap)');

      // The fleet table shows the numbers of --format json.
      const cells = await tab.$$eval('table.summary:not(.by-gpu) tbody td', (tds) => tds.map((td) => td.textContent));
      expect(cells.slice(0, 4)).toEqual(['gpu-node-01', 'train', '4', summary.gpu_hours.toFixed(1)]);
      expect(cells).toContain(`${summary.energy_kwh.toFixed(2)} kWh`);
      // Each column named as the text report names it ("missed GPU-h" there is "Missed GPU-hours" here).
      const headers = await tab.$$eval('table.summary:not(.by-gpu) thead th', (ths) => ths.map((th) => th.textContent ?? ''));
      const missed = headers.findIndex((h) => h.toLowerCase().startsWith('missed'));
      expect(headers[missed]!.toLowerCase().replace('hours', 'h')).toBe('missed gpu-h');
      expect(text.stdout).toContain('missed GPU-h');
      expect(cells[missed]).toBe(summary.missed_gpu_hours.toFixed(1));
      expect(summary.missed_gpu_hours).toBeCloseTo(4 * 3, 0);

      expect(requests.every((url) => url.startsWith('file://'))).toBe(true);
      if (process.env.KEEP_SCREENSHOT) await tab.screenshot({ path: process.env.KEEP_SCREENSHOT, fullPage: true });
    } finally {
      await browser.close();
    }
  }, 180_000);
});

describe('the HTML report of GPU ids that are not numbers', () => {
  // As the rows and the summary: Number() of such an id is NaN, which is no order beside numbers,
  // and the UUIDs decided instead (GPU 0, GPU a, GPU 1).
  it('shows the numbered GPUs in number order, the others after them by name', async () => {
    const dir = await tempDir();
    const ids = [
      ['1', 'GPU-z'],
      ['a', 'GPU-m'],
      ['0', 'GPU-a'],
    ];
    const rows = [0, 15_000, 30_000].flatMap((ms) =>
      ids.map(([gpu, uuid]) => `${new Date(Date.UTC(2026, 0, 2) + ms).toISOString()},h,t,${gpu},${uuid},n,ok,5,5,10,5,5,1,1`),
    );
    await writeFile(join(dir, 't.csv'), `${HEADER}\n${rows.join('\n')}\n`);
    const report = await buildReport({ csvDirs: [dir], by: 'hour' });
    if ('error' in report) throw new Error(report.error);
    const headings = [...reportHtml(report, 'order').matchAll(/<h3>GPU (\S+)/g)].map((m) => m[1]);
    expect(headings).toEqual(['0', '1', 'a']);
  });
});

// Issue 39: the jobs table overflowed a 1400-pixel screen (full ISO times), the summary was cut at 900,
// the charts kept their drawn width, failed samples were shaded faintly, GPUs with the same values hid
// one another, and nothing said what the findings' colors mean. Measured in the page, not by eye.
describe('the demo report with its jobs at 1400 and 900 pixels', () => {
  it('overflows nowhere, stretches its charts, and tells its lines and severities apart', async () => {
    const dir = await tempDir();
    const page = join(dir, 'report.html');
    const result = await runCli(['report', '--demo', '--by', 'job', '--format', 'html', '--out', page], { TZ: 'UTC' }, 60_000);
    expect(result.exitCode).toBe(0);
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    try {
      for (const width of [1400, 900]) {
        const tab = await browser.newPage({ viewport: { width, height: 900 } });
        await tab.goto(pathToFileURL(page).href);
        const shot = await tab.screenshot({ fullPage: true });
        expect(shot.length).toBeGreaterThan(10_000);
        const measured = await tab.evaluate(() => ({
          page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
          // Each table against the panel it sits in: one that is wider runs out of it.
          tables: [...document.querySelectorAll('table')]
            .filter((table) => table.getClientRects().length > 0)
            .map((table) => [table.className, table.scrollWidth, table.parentElement!.clientWidth] as const),
          charts: [...document.querySelectorAll('figure.chart')].map((figure) => {
            const svg = figure.querySelector('svg')!;
            return [figure.id, svg.getBoundingClientRect().width, figure.getBoundingClientRect().width, svg.viewBox.baseVal.width] as const;
          }),
        }));
        expect(measured.page[0], `page at ${width} px`).toBeLessThanOrEqual(measured.page[1]!);
        expect(measured.tables.map(([name]) => name).sort()).toEqual(['summary', 'summary by-gpu', 'summary jobs']);
        for (const [name, used, room] of measured.tables) expect(used, `${name} at ${width} px`).toBeLessThanOrEqual(room);
        // Every chart fills its figure, and the figures fill the row: never narrower than drawn.
        for (const [id, svgWidth, figureWidth, drawn] of measured.charts) {
          expect(Math.abs(svgWidth - figureWidth), id).toBeLessThan(1);
          expect(svgWidth, id).toBeGreaterThanOrEqual(drawn - 1);
        }
        if (width === 900) expect(measured.charts.find(([id]) => id === 'host-0-utilization')![1]).toBeGreaterThan(800);
        await tab.close();
      }
      const tab = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await tab.goto(pathToFileURL(page).href);
      // The four GPUs of the overview: four dash patterns, so equal values still show as four lines.
      const dashes = await tab.$$eval('#host-0-utilization path.line', (paths) =>
        paths.map((p) => p.getAttribute('stroke-dasharray') ?? ''),
      );
      expect(new Set(dashes).size).toBe(4);
      // GPU 3's 40 failed samples (10 minutes of an hour) shaded at half strength at least.
      const failed = await tab.$$eval('#host-0-gpu-3-utilization rect.failed', (rects) =>
        rects.map((r) => Number(r.getAttribute('fill-opacity'))),
      );
      expect(failed.length).toBeGreaterThan(0);
      for (const opacity of failed) expect(opacity).toBeGreaterThanOrEqual(0.5);
      // The findings' two colors said in words.
      expect(await tab.locator('.key.severity').textContent()).toMatch(/act on it: .*worth a look: /);
    } finally {
      await browser.close();
    }
  }, 180_000);
});
