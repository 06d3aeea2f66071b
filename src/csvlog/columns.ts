import { FIELDS } from '../fields/fields.js';
import type { FieldSpec } from '../fields/field-spec.js';

/** Columns every row starts with, in this order; the field table's `csv` columns follow. */
export const IDENTITY_COLUMNS = ['time', 'host', 'task_id', 'gpu_id', 'gpu_uuid', 'gpu_name', 'status'] as const;

export const CSV_FIELDS: readonly FieldSpec[] = FIELDS.filter((field) => field.csv);

/**
 * The last column: the jobs holding the GPU at that sample (jobs-cell.ts). Last, so that files
 * written before it read as before (columns are found by name) and a reader that cuts at the field
 * columns still lines up.
 */
export const JOBS_COLUMN = 'jobs';

/**
 * Beside `jobs`: the jobs that reserved the GPU, running on it or not (jobs-cell.ts). Files written
 * before it have no such column: they read as not known, as an empty cell does.
 */
export const RESERVED_COLUMN = 'reserved';

export const CSV_HEADER: readonly string[] = [...IDENTITY_COLUMNS, ...CSV_FIELDS.map((field) => field.csv!), JOBS_COLUMN, RESERVED_COLUMN];

export type IdentityColumn = (typeof IDENTITY_COLUMNS)[number];

/** The CSV column that logs the --query-gpu field `query`; throws for a field not logged (a programmer error). */
export function csvColumnOf(query: string): string {
  const column = CSV_FIELDS.find((field) => field.query === query)?.csv;
  if (column === undefined) throw new Error(`--query-gpu field ${query} has no CSV column`);
  return column;
}

/** RFC 4180: quote a cell holding a comma, quote, CR or LF, doubling its quotes. */
export const csvCell = (text: string): string => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

export const csvLine = (cells: readonly string[]): string => `${cells.map(csvCell).join(',')}\n`;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Local time, ISO 8601 with milliseconds and the zone offset: 2026-11-29T18:22:01.209+08:00. */
export function localIsoTime(date: Date): string {
  const offset = -date.getTimezoneOffset();
  const sign = offset >= 0 ? '+' : '-';
  const abs = Math.abs(offset);
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}` +
    `${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
  );
}

// A hostname holds letters, digits, '-' and '.', never ':': no real host can be named like this.
const DEMO_HOST_PREFIX = 'demo:';

/**
 * The `host` cell of a row: the hostname, or `demo:<hostname>` for rows of `--source demo`, whose
 * GPUs are recordings, not this host's. The columns stay the same, so every old file reads as before
 * and a demo row is counted apart from the host's own, under a name that says what it is.
 */
export const csvHost = (hostname: string, source: string): string => (source === 'demo' ? `${DEMO_HOST_PREFIX}${hostname}` : hostname);

/** Whether a row's `host` says it was written by `--source demo`. */
export const isDemoHost = (host: string): boolean => host.startsWith(DEMO_HOST_PREFIX);
