import { localIsoTime } from '../../csvlog/columns.js';
import { compareGpuIds, HOUR, type HostStats, type SeriesStats } from '../aggregate.js';
import type { Finding } from '../findings.js';
import { PALETTE, SCRIPT, STYLE } from './assets.js';
import { dayLabel, hourLabel, zoneOffsets } from './axis.js';
import { errorShares, gapShares, gridFor, memoryGiB, onGrid, power, utilization, values, type Grid } from './buckets.js';
import { chartSvg, type ChartLine } from './chart.js';
import { escapeHtml } from './escape.js';
import { inGiB } from './finding-text.js';
import { summaryHtml } from './summary.js';
import { jobsHtml } from './jobs.js';
import type { Report } from '../build.js';

const seriesKey = (host: string, task: string, gpu = '', uuid = '') => `${host}\u0000${task}\u0000${gpu}\u0000${uuid}`;

/** Where each host/task and GPU's charts are on the page: ids made of indexes, never of names. */
function anchors(hosts: readonly HostStats[], gpusOf: (host: HostStats) => SeriesStats[]): Map<string, string> {
  const ids = new Map<string, string>();
  hosts.forEach((host, h) => {
    ids.set(seriesKey(host.host, host.task), `host-${h}`);
    gpusOf(host).forEach((s, g) => {
      ids.set(seriesKey(s.host, s.task, s.gpu, s.uuid), `host-${h}-gpu-${g}`);
    });
  });
  return ids;
}

const where = (f: Finding) =>
  `${escapeHtml(f.host)}${f.task_id ? ` / ${escapeHtml(f.task_id)}` : ''}${f.gpu_id ? ` GPU ${escapeHtml(f.gpu_id)}` : ''}`;

function findingItem(f: Finding, anchor: string | undefined): string {
  const link = anchor ? ` <a href="#${anchor}">charts ↓</a>` : '';
  return `<li class="${f.kind}"><b>${escapeHtml(f.kind.replace('_', ' '))}</b> ${where(f)}: ${escapeHtml(inGiB(f.summary))}${link}</li>`;
}

const legend = (lines: readonly ChartLine[]) =>
  `<div class="legend">${lines
    .map(
      (l) =>
        `<span><svg width="22" height="6" aria-hidden="true"><line x1="1" x2="21" y1="3" y2="3" stroke="${l.color}" stroke-width="2.5"${l.dash ? ` stroke-dasharray="${l.dash}"` : ''}/></svg>${escapeHtml(l.name)}</span>`,
    )
    .join('')}</div>`;

/** Dash patterns of the overview's lines, by GPU: two GPUs with the same values stay two lines. */
const DASHES = ['', '7 3', '2 3', '9 3 2 3'];

/** What the findings' colors mean. */
const SEVERITY_KEY =
  '<p class="key severity"><i class="act"></i>act on it: memory that grows, samples that failed<i class="look"></i>worth a look: GPUs held idle or little used, uneven, or gaps in the collection</p>';

const KEY =
  '<div class="key">shaded:<i style="background:#c9ccd1"></i>no samples (collection gap)<i style="background:#ee7d7a"></i>failed samples</div>';

/** A host's collector on the grid: its gaps, and the failed share of all its GPUs' samples. */
function hostShading(host: HostStats, gpus: readonly SeriesStats[], grid: Grid): { gaps: number[]; errors: number[] } {
  const own = Array.from({ length: grid.n }, (): { samples: number; missingMs: number } | undefined => undefined);
  for (const [hour, b] of host.hourly) {
    const i = Math.floor((hour - grid.x0) / grid.step);
    const into = (own[i] ??= { samples: 0, missingMs: 0 });
    into.samples += b.samples;
    into.missingMs += b.missingMs;
  }
  const all = gpus.map((s) => onGrid(s.hourly, grid));
  const errors = own.map((_, i) => {
    const samples = all.reduce((a, b) => a + (b[i]?.samples ?? 0), 0);
    return samples ? all.reduce((a, b) => a + (b[i]?.errors ?? 0), 0) / samples : 0;
  });
  return { gaps: gapShares(own, grid), errors };
}

function hostSection(
  host: HostStats,
  h: number,
  gpus: readonly SeriesStats[],
  failedOnly: readonly SeriesStats[],
  grid: Grid,
  found: readonly Finding[],
): string {
  const id = `host-${h}`;
  const buckets = gpus.map((s) => onGrid(s.hourly, grid));
  const name = (s: SeriesStats) => `GPU ${s.gpu}`;
  const color = (g: number) => PALETTE[g % PALETTE.length]!;
  const shading = hostShading(host, [...gpus, ...failedOnly], grid);
  const overviewLines = (value: Parameters<typeof values>[1]) =>
    gpus.map((s, g) => ({
      name: name(s),
      color: color(g),
      dash: DASHES[g % DASHES.length] || undefined,
      values: values(buckets[g]!, value),
    }));
  const overview = [
    chartSvg({
      id: `${id}-utilization`,
      title: 'Utilization, every GPU (hourly average)',
      unit: '%',
      max: 100,
      width: 610,
      height: 210,
      grid,
      lines: overviewLines(utilization),
      ...shading,
    }),
    chartSvg({
      id: `${id}-memory`,
      title: 'Memory used, every GPU (hourly peak)',
      unit: 'GiB',
      width: 610,
      height: 210,
      grid,
      lines: overviewLines(memoryGiB),
      ...shading,
    }),
  ];
  const hostFindings = found.filter((f) => f.host === host.host && f.task_id === host.task && f.gpu_id === '');
  const gpuSections = gpus.map((s, g) => {
    const b = buckets[g]!;
    const shade = { gaps: gapShares(b, grid), errors: errorShares(b) };
    const line = (value: Parameters<typeof values>[1]) => [{ name: name(s), color: color(g), values: values(b, value) }];
    const own = found.filter((f) => f.host === s.host && f.task_id === s.task && f.gpu_id === s.gpu && f.gpu_uuid === s.uuid);
    const small = { width: 400, height: 150, grid, ...shade };
    return `<section class="gpu panel" id="${id}-gpu-${g}"><h3>GPU ${escapeHtml(s.gpu)} <small>${escapeHtml(s.uuid)}</small></h3>
${own.map((f) => `<p class="finding ${f.kind}">${escapeHtml(inGiB(f.summary))}</p>`).join('\n')}
<div class="charts">${chartSvg({ ...small, id: `${id}-gpu-${g}-utilization`, title: 'Utilization (hourly average)', unit: '%', max: 100, lines: line(utilization) })}
${chartSvg({ ...small, id: `${id}-gpu-${g}-memory`, title: 'Memory used (hourly peak)', unit: 'GiB', lines: line(memoryGiB) })}
${chartSvg({ ...small, id: `${id}-gpu-${g}-power`, title: 'Power draw (hourly average)', unit: 'W', lines: line(power) })}</div></section>`;
  });
  return `<section class="host" id="${id}"><h2>${escapeHtml(host.host)} · ${escapeHtml(host.task)} <small>${gpus.length} GPU${gpus.length === 1 ? '' : 's'}</small></h2>
<div class="panel overview">${hostFindings.map((f) => `<p class="finding ${f.kind}">${escapeHtml(inGiB(f.summary))}</p>`).join('\n')}
${legend(overviewLines(utilization))}<div class="charts">${overview.join('\n')}</div>${KEY}</div>
${gpuSections.join('\n')}</section>`;
}

/**
 * One self-contained page: findings (one per cause, each linking to its charts), the summary per host
 * and task (per GPU on demand), then per host an overview of every GPU and per GPU small multiples.
 */
export function reportHtml(report: Report, title: string): string {
  const { aggregator } = report;
  const hosts = [...aggregator.hosts.values()].sort((a, b) => a.host.localeCompare(b.host) || a.task.localeCompare(b.task));
  const seriesOf = (host: HostStats) => [...aggregator.series.values()].filter((s) => s.host === host.host && s.task === host.task);
  const gpusOf = (host: HostStats) =>
    seriesOf(host)
      .filter((s) => s.gpu !== '')
      .sort((a, b) => compareGpuIds(a.gpu, b.gpu) || a.uuid.localeCompare(b.uuid));
  const ids = anchors(hosts, gpusOf);
  // Reduced, not spread into Math.min: a year of hours of many GPUs is more arguments than a call takes.
  let first = Infinity;
  let last = -Infinity;
  for (const s of aggregator.series.values())
    for (const hour of s.hourly.keys()) [first, last] = [Math.min(first, hour), Math.max(last, hour)];
  const grid = first <= last ? gridFor(first, last) : undefined;

  const anchorOf = (f: Finding) => ids.get(seriesKey(f.host, f.task_id, f.gpu_id, f.gpu_uuid)) ?? ids.get(seriesKey(f.host, f.task_id));
  const findingsList = report.findings.length
    ? `<ul class="findings">${report.findings.map((f) => findingItem(f, anchorOf(f))).join('\n')}</ul>`
    : '<p class="none">No findings: nothing grew, idled, drifted apart, went missing or failed.</p>';
  const summaryAnchor = (r: { host: string; task_id: string; gpu_id?: string; gpu_uuid?: string }) =>
    ids.get(seriesKey(r.host, r.task_id, r.gpu_id, r.gpu_uuid)) ?? ids.get(seriesKey(r.host, r.task_id)) ?? '';
  const sections = grid
    ? hosts.map((host, h) =>
        hostSection(
          host,
          h,
          gpusOf(host),
          seriesOf(host).filter((s) => s.gpu === ''),
          grid,
          report.findings,
        ),
      )
    : [];
  const skipped = [
    report.oddRows.count ? `${report.oddRows.count} rows skipped` : '',
    report.badFiles.length
      ? `${report.badFiles.length} unreadable file(s) skipped: ${report.badFiles.map((b) => `${b.file} (${b.error})`).join('; ')}`
      : '',
  ].filter(Boolean);
  const range = grid
    ? `${dayLabel(first)} ${hourLabel(first)} to ${dayLabel(last + HOUR)} ${hourLabel(last + HOUR)} (UTC${localIsoTime(new Date(first)).slice(23)})`
    : 'no samples';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>${STYLE}</style></head><body><main>
<h1>${escapeHtml(title)}</h1>
<p class="meta">${escapeHtml(range)} · ${report.rowsRead.toLocaleString('en-US')} samples from ${report.files} files${skipped.length ? ` · ${escapeHtml(skipped.join(' · '))}` : ''}</p>
<h2 id="findings">Findings</h2>
<div class="panel">${findingsList}${report.findings.length ? SEVERITY_KEY : ''}</div>
<h2 id="summary">Summary</h2>
<div class="panel">${summaryHtml(report.summary, report.summaryByGpu, summaryAnchor)}</div>
${report.by === 'job' ? `<h2 id="jobs">Jobs</h2>\n<div class="panel">${jobsHtml(report.jobs)}</div>\n` : ''}${sections.join('\n')}
<script type="application/json" id="zone">${JSON.stringify(grid ? zoneOffsets(grid.x0, grid.x0 + grid.n * grid.step) : [[0, 0]])}</script>
<script>${SCRIPT}</script>
</main></body></html>
`;
}
