import { localIsoTime } from '../csvlog/columns.js';
import type { ReportRow } from './aggregate.js';
import type { Report } from './report.js';

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const WIDTH = 360;
const HEIGHT = 120;
const PAD = 28;

/** One line chart as inline SVG: the series over the report's periods, with its axis range. */
function chart(title: string, unit: string, points: { x: number; y: number }[], x0: number, x1: number): string {
  const ys = points.map((p) => p.y);
  const max = ys.length ? Math.max(...ys) : 1;
  const top = unit === '%' ? 100 : max > 0 ? max * 1.1 : 1;
  const sx = (x: number) => PAD + ((x - x0) / Math.max(1, x1 - x0)) * (WIDTH - PAD - 8);
  const sy = (y: number) => HEIGHT - 18 - (y / top) * (HEIGHT - 32);
  const path = points.map((p) => `${sx(p.x).toFixed(1)},${sy(p.y).toFixed(1)}`).join(' ');
  return `<figure><figcaption>${escapeHtml(title)}</figcaption><svg class="chart" data-points="${points.length}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${escapeHtml(title)}">
<line x1="${PAD}" y1="${HEIGHT - 18}" x2="${WIDTH - 8}" y2="${HEIGHT - 18}" class="axis"/><line x1="${PAD}" y1="14" x2="${PAD}" y2="${HEIGHT - 18}" class="axis"/>
<text x="2" y="18">${Math.round(top)}</text><text x="2" y="${HEIGHT - 18}">0</text><text x="${PAD}" y="${HEIGHT - 4}">${escapeHtml(localIsoTime(new Date(x0)).slice(0, 16))}</text><text x="${WIDTH - 8}" y="${HEIGHT - 4}" text-anchor="end">${escapeHtml(localIsoTime(new Date(x1)).slice(0, 16))}</text>
<polyline points="${path}" class="line"/></svg><span class="unit">${escapeHtml(unit)}</span></figure>`;
}

/** One self-contained page: the findings on top, then per GPU charts of utilization, memory and power. */
export function reportHtml(report: Report, title: string): string {
  const bySeries = new Map<string, ReportRow[]>();
  for (const row of report.rows) {
    const key = `${row.host}\u0000${row.task_id}\u0000${row.gpu_id}\u0000${row.gpu_uuid}`;
    bySeries.set(key, [...(bySeries.get(key) ?? []), row]);
  }
  const x0 = Math.min(...report.rows.map((r) => r.period));
  const x1 = Math.max(...report.rows.map((r) => r.period));
  const points = (rows: ReportRow[], value: (r: ReportRow) => number | undefined) =>
    rows.flatMap((r) => {
      const y = value(r);
      return y === undefined ? [] : [{ x: r.period, y }];
    });
  const sections = [...bySeries.values()].map((rows) => {
    const { host, task_id, gpu_id, gpu_uuid } = rows[0]!;
    const found = report.findings.filter((f) => f.host === host && f.task_id === task_id && (f.gpu_id === gpu_id || f.gpu_id === ''));
    return `<section class="gpu"><h2>${escapeHtml(host)} · ${escapeHtml(task_id)} · GPU ${escapeHtml(gpu_id)} <small>${escapeHtml(gpu_uuid)}</small></h2>
${found.map((f) => `<p class="finding ${f.kind}">${escapeHtml(f.kind)}: ${escapeHtml(f.summary)}</p>`).join('\n')}
<div class="charts">${chart('Utilization (average)', '%', points(rows, (r) => r.avg_utilization_percent), x0, x1)}
${chart('Memory used (peak)', 'MiB', points(rows, (r) => r.max_memory_used_mib), x0, x1)}
${chart('Power draw (average)', 'W', points(rows, (r) => r.avg_power_draw_w), x0, x1)}</div></section>`;
  });
  const findingsList = report.findings.length
    ? `<ul class="findings">${report.findings.map((f) => `<li class="${f.kind}"><b>${escapeHtml(f.kind)}</b> ${escapeHtml(f.host)}${f.task_id ? ` / ${escapeHtml(f.task_id)}` : ''}${f.gpu_id ? ` GPU ${escapeHtml(f.gpu_id)}` : ''}: ${escapeHtml(f.summary)}</li>`).join('\n')}</ul>`
    : '<p class="none">No findings: nothing grew, idled, drifted apart, went missing or failed.</p>';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin: 1.2em 0 .3em; } small { color: #777; font-weight: normal; }
.findings li { margin: .2em 0; } .findings b, .finding { font-weight: 600; }
.memory_growth, .errors { color: #a40000; } .idle, .imbalance, .collection_gaps { color: #8a5a00; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; } figure { margin: 0; } figcaption { font-size: .9em; color: #444; }
svg.chart text { font-size: 9px; fill: #666; } .axis { stroke: #bbb; } .line { fill: none; stroke: #1f6feb; stroke-width: 1.5; }
.unit { font-size: .8em; color: #777; } .meta { color: #777; font-size: .9em; }
</style></head><body>
<h1>${escapeHtml(title)}</h1>
<p class="meta">${report.rows.length} rows from ${report.rowsRead} samples in ${report.files} files${report.oddRows.count ? `, ${report.oddRows.count} rows skipped` : ''}; ${escapeHtml(localIsoTime(new Date(x0)))} to ${escapeHtml(localIsoTime(new Date(x1)))}</p>
<h2>Findings</h2>
${findingsList}
${sections.join('\n')}
</body></html>
`;
}
