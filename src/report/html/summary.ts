import type { SummaryRow } from '../summary.js';
import { escapeHtml } from './escape.js';

type Column = [header: string, title: string, cell: (row: SummaryRow) => string];

const num = (x: number | undefined, digits: number) =>
  x === undefined ? '–' : x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const COLUMNS: Column[] = [
  ['GPU-hours', 'Good samples x the collection interval', (r) => num(r.gpu_hours, 1)],
  [
    'Busy',
    'Average utilization over the good samples: the share of that time a kernel ran',
    (r) => (r.busy_percent === undefined ? '–' : `${num(r.busy_percent, 1)} %`),
  ],
  ['Idle holding memory', 'Hours under 2 % utilization while holding at least 1 GiB', (r) => `${num(r.idle_with_memory_hours, 1)} h`],
  ['Energy', 'Power x time over the good samples; gaps and failed samples add nothing', (r) => `${num(r.energy_kwh, 2)} kWh`],
  // Named as the text report's "missed GPU-h" column and the JSON's missed_gpu_hours.
  ['Missed GPU-hours', 'GPU-hours lost in collection gaps: no sample from the GPU', (r) => num(r.missed_gpu_hours, 1)],
  [
    'Peak memory',
    'Highest memory used on any one GPU',
    (r) => (r.peak_memory_used_mib === undefined ? '–' : `${num(r.peak_memory_used_mib / 1024, 1)} GiB`),
  ],
  ['Failed samples', 'Rows whose status was not ok', (r) => num(r.error_samples, 0)],
];

function table(rows: readonly SummaryRow[], byGpu: boolean, anchor: (row: SummaryRow) => string): string {
  const head =
    ['Host', 'Task', byGpu ? 'GPU' : 'GPUs'].map((h) => `<th>${h}</th>`).join('') +
    COLUMNS.map(([h, title]) => `<th class="n" title="${escapeHtml(title)}">${h}</th>`).join('');
  const body = rows.map((r) => {
    const gpu = byGpu ? `<a href="#${anchor(r)}">${escapeHtml(r.gpu_id || '(none)')}</a>` : String(r.gpus);
    return `<tr><td><a href="#${anchor(r)}">${escapeHtml(r.host)}</a></td><td>${escapeHtml(r.task_id)}</td><td>${gpu}</td>${COLUMNS.map(([, , cell]) => `<td class="n">${escapeHtml(cell(r))}</td>`).join('')}</tr>`;
  });
  return `<table class="summary${byGpu ? ' by-gpu' : ''}"><thead><tr>${head}</tr></thead><tbody>${body.join('')}</tbody></table>`;
}

/** The fleet table per host and task, and the same per GPU behind a disclosure. */
export function summaryHtml(byTask: readonly SummaryRow[], byGpu: readonly SummaryRow[], anchor: (row: SummaryRow) => string): string {
  return `${table(byTask, false, anchor)}
<details><summary>Per GPU</summary>${table(byGpu, true, anchor)}</details>`;
}
