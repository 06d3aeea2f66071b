import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeFile } from 'node:fs/promises';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { HEADER, PROFILES, generateRows } from '../../bench/make-history.mjs';
import { runCli, tempDir } from '../helpers.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

describe('the HTML report in headless Chromium', () => {
  it('draws utilization, memory and power charts per GPU with the findings on top, without the network', async () => {
    const dir = await tempDir();
    const rows = generateRows({
      start: Date.UTC(2026, 10, 23),
      hours: 72,
      intervalSeconds: 120,
      gpus: ['leak', (h: number, r: () => number) => (h > 20 && h < 30 ? PROFILES.idleWithMemory() : PROFILES.training(h, r))],
    });
    await writeFile(join(dir, 'train.csv'), `${HEADER}\n${rows.join('\n')}\n`);
    const page = join(dir, 'report.html');
    const result = await runCli(['report', '--csv-dir', dir, '--format', 'html', '--out', page]);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);

    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
    try {
      const tab = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const requests: string[] = [];
      tab.on('request', (request) => requests.push(request.url()));
      await tab.goto(pathToFileURL(page).href);
      const charts = await tab.$$eval('svg.chart', (svgs) =>
        svgs.map((svg) => {
          const line = svg.querySelector('polyline');
          const box = line?.getBoundingClientRect();
          return { points: Number(svg.getAttribute('data-points')), coordinates: (line?.getAttribute('points') ?? '').split(' ').length, width: box?.width ?? 0, height: box?.height ?? 0 };
        }),
      );
      expect(charts).toHaveLength(6);
      for (const chart of charts) {
        expect(chart.points).toBe(72);
        expect(chart.coordinates).toBe(72);
        expect(chart.width).toBeGreaterThan(200);
      }
      const findings = await tab.$$eval('ul.findings li', (items) => items.map((li) => li.textContent ?? ''));
      expect(findings.some((f) => f.startsWith('memory_growth') && f.includes('GPU 0'))).toBe(true);
      expect(findings.some((f) => f.startsWith('idle') && f.includes('GPU 1'))).toBe(true);
      expect(requests.every((url) => url.startsWith('file://'))).toBe(true);
      await tab.screenshot({ path: join(dir, 'report.png'), fullPage: true });
      if (process.env.KEEP_SCREENSHOT) await tab.screenshot({ path: process.env.KEEP_SCREENSHOT, fullPage: true });
    } finally {
      await browser.close();
    }
  });
});
