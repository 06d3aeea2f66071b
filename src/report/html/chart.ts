import { formatValue, timeTicks, valueTicks } from './axis.js';
import type { Grid } from './buckets.js';
import { escapeHtml } from './escape.js';

/** One series on a chart: a value per grid bucket, undefined where there is none (the line breaks). */
export interface ChartLine {
  name: string;
  color: string;
  /** A dash pattern (SVG stroke-dasharray): GPUs with the same values draw one line over another, told apart by it. */
  dash?: string;
  values: readonly (number | undefined)[];
}

export interface ChartSpec {
  id: string;
  title: string;
  unit: string;
  width: number;
  height: number;
  grid: Grid;
  /** A fixed top (100 for %); else round ticks over the data. */
  max?: number;
  lines: readonly ChartLine[];
  /** Per bucket, the share in a gap, and the share of failed samples: both shaded. */
  gaps: readonly number[];
  errors: readonly number[];
}

const MARGIN = { left: 56, right: 12, top: 10, bottom: 22 };
const px = (x: number) => x.toFixed(1);

/** Runs of buckets with a share worth shading, neighbours with (nearly) the same share joined into one rect. */
function shadeRuns(shares: readonly number[]): { from: number; to: number; share: number }[] {
  const runs: { from: number; to: number; share: number }[] = [];
  shares.forEach((share, i) => {
    if (share < 0.02) return;
    const last = runs[runs.length - 1];
    if (last && last.to === i && Math.abs(last.share - share) < 0.05) last.to = i + 1;
    else runs.push({ from: i, to: i + 1, share });
  });
  return runs;
}

/** SVG path data with a separate subpath (M) for every stretch of consecutive values. */
export function segments(values: readonly (number | undefined)[], x: (i: number) => number, y: (v: number) => number): string {
  let d = '';
  let drawing = false;
  values.forEach((v, i) => {
    if (v === undefined) {
      drawing = false;
      return;
    }
    // A lone value still shows: a zero-length stroke with round caps is a dot.
    const lone = !drawing && values[i + 1] === undefined;
    d += `${drawing ? 'L' : 'M'}${px(x(i))},${px(y(v))}${lone ? 'h0' : ''}`;
    drawing = true;
  });
  return d;
}

/**
 * A generous width of a tick label in px (10 px text; bold for a day): wide fonts such as DejaVu Sans
 * draw "Mon 23 Nov" in bold 67 px wide. Generous, since the reader's font is not known here.
 */
const labelWidth = (label: string, major: boolean) => label.length * (major ? 7.2 : 6.6);

interface XLabel {
  x: number;
  label: string;
  major: boolean;
}
interface PlacedLabel extends XLabel {
  anchor: 'start' | 'middle' | 'end';
}

/**
 * Which time labels to draw, and anchored how: each stays whole inside the chart (anchored inwards at
 * an edge) and clear of its neighbours; day labels are placed first, hour labels where room is left.
 * Gridlines are drawn for every tick all the same.
 */
function placeLabels(ticks: readonly XLabel[], width: number): PlacedLabel[] {
  const GAP = 6;
  const boxed = ticks.map((t) => {
    const w = labelWidth(t.label, t.major);
    const anchor: PlacedLabel['anchor'] = t.x - w / 2 < 1 ? 'start' : t.x + w / 2 > width - 1 ? 'end' : 'middle';
    const left = anchor === 'start' ? t.x : anchor === 'end' ? t.x - w : t.x - w / 2;
    return { label: { x: t.x, label: t.label, major: t.major, anchor }, left, right: left + w };
  });
  const kept: typeof boxed = [];
  for (const major of [true, false])
    for (const box of boxed.filter((b) => b.label.major === major))
      if (kept.every((k) => box.right + GAP <= k.left || k.right + GAP <= box.left)) kept.push(box);
  return kept.map((k) => k.label).sort((a, b) => a.x - b.x);
}

const round2 = (v: number | undefined) => (v === undefined ? null : Math.round(v * 100) / 100);

/** One time-series chart as inline SVG: round ticks with units, day and hour ticks, gridlines, gaps shaded and broken. */
export function chartSvg(spec: ChartSpec): string {
  const { grid, width, height } = spec;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = height - MARGIN.top - MARGIN.bottom;
  const bucketX = (i: number) => MARGIN.left + (i / grid.n) * plotW;
  const timeX = (t: number) => MARGIN.left + ((t - grid.x0) / (grid.n * grid.step)) * plotW;
  const highest = spec.lines.reduce((a, l) => l.values.reduce((b: number, v) => (v === undefined ? b : Math.max(b, v)), a), 0);
  const ticks = valueTicks(spec.max ?? highest);
  const top = ticks[ticks.length - 1]!;
  const y = (v: number) => MARGIN.top + plotH - (v / top) * plotH;
  const bottom = MARGIN.top + plotH;

  const shade = (shares: readonly number[], kind: string) =>
    shadeRuns(shares).map(
      (r) =>
        // Failed samples are few (40 of an hour's 240 is one lost GPU for 10 minutes): shaded from a
        // share that still shows, where a gap's grey may stay faint.
        `<rect class="${kind}" x="${px(bucketX(r.from))}" y="${MARGIN.top}" width="${px(Math.max(2, bucketX(r.to) - bucketX(r.from)))}" height="${plotH}" fill-opacity="${((kind === 'failed' ? 0.5 : 0.15) + 0.45 * r.share).toFixed(2)}"/>`,
    );
  const yGrid = ticks.map(
    (v) =>
      `<line class="grid" x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${px(y(v))}" y2="${px(y(v))}"/><text class="tick" x="${MARGIN.left - 4}" y="${px(y(v) + 3)}" text-anchor="end">${escapeHtml(formatValue(v, spec.unit))}</text>`,
  );
  const xTicks = timeTicks(grid.x0, grid.x0 + grid.n * grid.step, Math.max(2, Math.floor(plotW / 64)));
  const xGrid = xTicks.map(
    (t) =>
      `<line class="grid${t.major ? ' major' : ''}" x1="${px(timeX(t.time))}" x2="${px(timeX(t.time))}" y1="${MARGIN.top}" y2="${bottom}"/>`,
  );
  const xLabels = placeLabels(
    xTicks.map((t) => ({ ...t, x: timeX(t.time) })),
    width,
  ).map(
    (l) =>
      `<text class="tick time${l.major ? ' major' : ''}" x="${px(l.x)}" y="${height - 6}" text-anchor="${l.anchor}">${escapeHtml(l.label)}</text>`,
  );
  // Values sit in the middle of their bucket.
  const lines = spec.lines.map(
    (l) =>
      `<path class="line" stroke="${l.color}"${l.dash ? ` stroke-dasharray="${l.dash}"` : ''} d="${segments(l.values, (i) => bucketX(i + 0.5), y)}"><title>${escapeHtml(l.name)}</title></path>`,
  );
  const hover = {
    x0: grid.x0,
    step: grid.step,
    unit: spec.unit,
    left: MARGIN.left,
    plotWidth: plotW,
    lines: spec.lines.map((l) => ({ name: l.name, color: l.color, values: l.values.map(round2) })),
    gaps: spec.gaps.map((s) => Math.round(s * 100) / 100),
    errors: spec.errors.map((s) => Math.round(s * 100) / 100),
  };
  // The figure grows from its drawn width to fill the row; the SVG scales with it (its viewBox).
  return `<figure class="chart" id="${spec.id}" style="flex-basis:${width}px"><figcaption>${escapeHtml(spec.title)}</figcaption>
<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(spec.title)}" data-chart="${escapeHtml(JSON.stringify(hover))}">
${yGrid.join('')}
${xGrid.join('')}${xLabels.join('')}
${shade(spec.gaps, 'gap').join('')}${shade(spec.errors, 'failed').join('')}
<line class="axis" x1="${MARGIN.left}" x2="${width - MARGIN.right}" y1="${bottom}" y2="${bottom}"/>
${lines.join('\n')}
<line class="cursor" x1="0" x2="0" y1="${MARGIN.top}" y2="${bottom}" visibility="hidden"/>
</svg></figure>`;
}
