import type { JobRow } from '../jobs.js';
import { jobName } from '../job-formats.js';
import { escapeHtml } from './escape.js';

type Column = [header: string, title: string, cell: (row: JobRow) => string];

const num = (x: number | undefined, digits: number) =>
  x === undefined ? '–' : x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "2026-11-25T00:00:15.025+00:00" -> "25 Nov 00:00", as the page's heading says its range (the year is there). */
const shortTime = (iso: string) => {
  const match = /^\d{4}-(\d\d)-(\d\d)T(\d\d:\d\d)/.exec(iso);
  return match ? `${Number(match[2])}\u00a0${MONTHS[Number(match[1]) - 1]} ${match[3]}` : iso;
};

// A unit stays with its number (a no-break space); the cells may wrap elsewhere, so that the table fits
// a 900-pixel window: the date above the time, the energy above how it was split.
const COLUMNS: Column[] = [
  ['GPU ids', 'The ids of the GPUs its processes held', (r) => r.gpus.join(' ')],
  ['Hours', 'The longest any one of its GPUs was held: samples x the collection interval', (r) => num(r.hours, 2)],
  ['GPU-hours', 'Hours held, added over its GPUs', (r) => num(r.gpu_hours, 2)],
  // One column for what it reserved (ids, then GPU-hours and how many of them idle), so that the
  // table still fits a 900-pixel window with the two figures the reservations added.
  [
    'Reserved',
    'The GPUs it reserved, running on them or not; its GPU-hours reserved, and of them those it ran nothing on or kept under 2 %',
    (r) =>
      r.reserved_gpu_hours === undefined
        ? '–'
        : `${r.reserved_gpus?.length ? `${r.reserved_gpus.join(' ')}: ` : ''}${num(r.reserved_gpu_hours, 2)} h (${num(r.reserved_idle_gpu_hours, 2)} idle)`,
  ],
  ['Busy', "The GPUs' utilization while it held them", (r) => (r.busy_percent === undefined ? '–' : `${num(r.busy_percent, 1)}\u00a0%`)],
  [
    'SM',
    "Its own processes' SM utilisation, where NVML gave it",
    (r) => (r.sm_percent === undefined ? '–' : `${num(r.sm_percent, 1)}\u00a0%`),
  ],
  ['Idle GPU-hours', 'GPU-hours held under 2 % utilization', (r) => num(r.idle_gpu_hours, 2)],
  [
    'Energy',
    "Its share of the GPUs' energy: split by time among the jobs on a GPU, or by their SM utilisation where NVML gave it",
    (r) => (r.energy_kwh === undefined ? '–' : `${num(r.energy_kwh, 3)}\u00a0kWh (${r.energy_split})`),
  ],
  [
    'Peak memory',
    'Most memory its processes held on one GPU',
    (r) => (r.peak_memory_mib === undefined ? '–' : `${num(r.peak_memory_mib / 1024, 1)}\u00a0GiB`),
  ],
  // Day and minute in the report's zone (the page's heading names the zone and the range): the full
  // ISO time with its offset made the table wider than a 1400-pixel screen.
  ['First seen', 'Its first sample', (r) => shortTime(r.first_seen)],
  ['Last seen', 'Its last sample', (r) => shortTime(r.last_seen)],
];

/** The table of `report --by job`: one row per job of each host and task. */
export function jobsHtml(rows: readonly JobRow[]): string {
  if (rows.length === 0)
    return '<p class="none">No row of the trail names its jobs (written before the jobs column, or with --no-processes).</p>';
  const head =
    ['Host', 'Task', 'Job', 'User'].map((h) => `<th>${h}</th>`).join('') +
    COLUMNS.map(([h, title]) => `<th class="n" title="${escapeHtml(title)}">${h}</th>`).join('');
  const body = rows.map(
    (r) =>
      `<tr class="job ${r.job_kind}"><td>${escapeHtml(r.host)}</td><td>${escapeHtml(r.task_id)}</td><td>${escapeHtml(jobName(r))}</td><td>${escapeHtml(r.user)}</td>${COLUMNS.map(([, , cell]) => `<td class="n">${escapeHtml(cell(r))}</td>`).join('')}</tr>`,
  );
  return `<table class="summary jobs"><thead><tr>${head}</tr></thead><tbody>${body.join('')}</tbody></table>`;
}
