import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { STYLE } from '../../../src/report/html/assets.js';
import { gridFor } from '../../../src/report/html/buckets.js';
import { chartSvg } from '../../../src/report/html/chart.js';

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const HOUR = 3_600_000;

// Spans the report draws (a few hours to a year), starting on odd local hours and at midnight, at
// both chart sizes the page uses. Local time as the page's: the labels are placed in this zone.
const SPANS_HOURS = [5, 13, 24, 30, 47, 72, 100, 168, 200, 336, 721, 2000, 8760];
const STARTS = [new Date(2026, 10, 23, 0).getTime(), new Date(2026, 10, 23, 17).getTime(), new Date(2026, 2, 28, 22).getTime()];
const SIZES = [
  { width: 400, height: 150 },
  { width: 610, height: 210 },
];

const charts = STARTS.flatMap((start) =>
  SPANS_HOURS.flatMap((hours) =>
    SIZES.map(({ width, height }, s) => {
      const grid = gridFor(start, start + (hours - 1) * HOUR);
      return chartSvg({
        id: `c-${start}-${hours}-${s}`,
        title: `${hours} h from ${new Date(start).toString()}, ${width} px`,
        unit: '%',
        max: 100,
        width,
        height,
        grid,
        lines: [{ name: 'GPU 0', color: '#1f77b4', values: Array.from({ length: grid.n }, () => 50) }],
        gaps: Array.from({ length: grid.n }, () => 0),
        errors: Array.from({ length: grid.n }, () => 0),
      });
    }),
  ),
);

describe('the time axis as the browser lays it out', () => {
  // The boxes measured are the glyphs Chromium drew with the page's own style: an estimate of text
  // width in our code is what is under test, so the test measures instead of estimating.
  it('no two date or hour labels overlap, none runs off the chart, and each chart keeps at least two', async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu'] });
    try {
      const tab = await browser.newPage({ viewport: { width: 1320, height: 900 } });
      await tab.setContent(
        `<!doctype html><html><head><style>${STYLE}</style></head><body><main>${charts.join('\n')}</main></body></html>`,
      );
      const measured = await tab.$$eval('figure.chart', (figures) =>
        figures.map((figure) => {
          const svg = figure.querySelector('svg')!;
          // Labels are placed in the drawing's own units (its viewBox), whatever width the page gives it.
          const width = svg.viewBox.baseVal.width;
          const labels = [...svg.querySelectorAll('text.tick.time')].map((text) => {
            const box = (text as SVGTextElement).getBBox();
            return { label: text.textContent ?? '', left: box.x, right: box.x + box.width };
          });
          return { title: figure.querySelector('figcaption')!.textContent ?? '', width, labels };
        }),
      );
      expect(measured).toHaveLength(charts.length);
      const problems: string[] = [];
      for (const chart of measured) {
        const sorted = [...chart.labels].sort((a, b) => a.left - b.left);
        if (sorted.length < 2) problems.push(`${chart.title}: ${sorted.length} time labels`);
        sorted.forEach((label, i) => {
          if (label.left < 0 || label.right > chart.width)
            problems.push(`${chart.title}: "${label.label}" runs off the chart (${label.left.toFixed(1)}..${label.right.toFixed(1)})`);
          const next = sorted[i + 1];
          if (next && next.left < label.right + 2)
            problems.push(
              `${chart.title}: "${label.label}" (to ${label.right.toFixed(1)}) overlaps "${next.label}" (from ${next.left.toFixed(1)})`,
            );
        });
      }
      expect(problems).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);
});
