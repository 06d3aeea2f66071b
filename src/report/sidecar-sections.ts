import { readHistoryBatches, type BadFile, type OddRows } from '../csvlog/read.js';
import type { SidecarMaker } from '../csvlog/rotate.js';
import type { Sections } from '../csvlog/sidecar.js';
import { segmentFromJson, segmentOf, segmentToJson, type HoursSegment } from './segment.js';
import type { HistoryRow } from '../csvlog/read.js';
import { FINDING_THRESHOLDS } from './findings.js';
import { JobAccount } from './jobs.js';
import type { JobHour } from './job-runs.js';

/**
 * The sections the report keeps in an archive's sidecar, and the one loop over the archive's rows
 * that makes them. A section is a part of the report's state over the archive's rows, as plain
 * JSON with a version of its own. To add one (docs/csv.md says the same): give it a name, a maker
 * fed from the loop in `makeSections`, a reader in `readSections` that answers undefined for
 * another version or shape, and use it in build.ts; sidecars written before it lack it, so
 * `current` says they are stale (the next `archive` run rewrites them) and the report reads those
 * archives' rows meanwhile.
 */

/** The sections of one archive, read back. */
export interface ArchiveSections {
  hours: HoursSegment;
  /** The per-job account of the archive's rows (`report --by job`, the held-idle finding). */
  jobs: JobAccount;
  /** The account of who reserved the GPUs (the `reserved` column: `report --by job`, the reserved-idle finding). */
  reserved: JobAccount;
}

/** Each section's name in the sidecar. */
const HOURS = 'hours';
const JOBS = 'jobs';
const RESERVED = 'reserved';
/** The jobs section's version: a change of JobHour's fields or meaning makes older sections stale. */
const JOBS_VERSION = 1;

/** The sections read back from a sidecar; undefined when one is missing, of another version or of the wrong shape. */
export function readSections(sections: Sections): ArchiveSections | undefined {
  const hours = segmentFromJson(sections[HOURS]);
  const jobs = jobsFromJson(sections[JOBS], 'held');
  const reserved = jobsFromJson(sections[RESERVED], 'reserved');
  return hours === undefined || jobs === undefined || reserved === undefined ? undefined : { hours, jobs, reserved };
}

const NUMBER_FIELDS = [
  'first',
  'last',
  'samples',
  'utilSum',
  'utilN',
  'smSum',
  'smN',
  'powerShareSum',
  'powerN',
  'smSplit',
  'idle',
  'lead',
  'tail',
  'best',
  'lastSeq',
] as const satisfies readonly (keyof JobHour)[];
const STRING_FIELDS = ['host', 'task', 'gpu', 'uuid', 'kind', 'id', 'user'] as const satisfies readonly (keyof JobHour)[];

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isFiniteNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A job hour as the sidecar holds it, checked field by field: a sidecar is a file others may have changed. */
function isJobHour(v: unknown): v is JobHour {
  return (
    isObject(v) &&
    NUMBER_FIELDS.every((f) => isFiniteNumber(v[f])) &&
    STRING_FIELDS.every((f) => typeof v[f] === 'string') &&
    typeof v.leadOpen === 'boolean' &&
    (v.memMax === undefined || isFiniteNumber(v.memMax)) &&
    (v.after === undefined || v.after === null || isFiniteNumber(v.after))
  );
}

/** The jobs section read back; undefined for another version, other thresholds or a wrong shape. */
function jobsFromJson(json: unknown, mode: JobAccount['mode']): JobAccount | undefined {
  if (!isObject(json) || json.version !== JOBS_VERSION || json.idle_max_utilization !== FINDING_THRESHOLDS.idleMaxUtilization)
    return undefined;
  const { hours, seq } = json;
  if (!Array.isArray(hours) || !Array.isArray(seq)) return undefined;
  const hoursOk = hours.every(
    (entry) =>
      Array.isArray(entry) && entry.length === 2 && isFiniteNumber(entry[0]) && Array.isArray(entry[1]) && entry[1].every(isJobHour),
  );
  const isCounter = (v: unknown) => isObject(v) && isFiniteNumber(v.n) && isFiniteNumber(v.time) && isFiniteNumber(v.step);
  const seqOk = seq.every((entry) => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && isCounter(entry[1]));
  return hoursOk && seqOk ? JobAccount.fromJSON({ hours, seq }, mode) : undefined;
}

const jobsToJson = (account: JobAccount) => ({
  version: JOBS_VERSION,
  idle_max_utilization: FINDING_THRESHOLDS.idleMaxUtilization,
  ...account.toJSON(),
});

/** The batches, each row also given to `also` on the way. */
async function* tee(batches: AsyncIterable<HistoryRow[]>, also: (row: HistoryRow) => void): AsyncIterable<HistoryRow[]> {
  for await (const rows of batches) {
    for (const row of rows) also(row);
    yield rows;
  }
}

/** Every section of one archive, from one pass over its rows; undefined when it cannot be read to its end. */
async function makeSections(path: string, gzip: boolean): Promise<Sections | undefined> {
  const odd: OddRows = { count: 0, examples: [] };
  const bad: BadFile[] = [];
  // The file's name in odd-row examples is the reader's to add: the archive may be read from elsewhere.
  const jobs = new JobAccount();
  const reserved = new JobAccount(undefined, 'reserved');
  const hours = await segmentOf(
    tee(readHistoryBatches([{ path, task: '', gzip }], odd, bad), (row) => {
      jobs.add(row);
      reserved.add(row);
    }),
    odd,
  );
  if (hours === undefined || bad.length > 0) return undefined;
  const prefix = `${path}: `;
  hours.odd = { count: odd.count, examples: odd.examples.map((e) => (e.startsWith(prefix) ? e.slice(prefix.length) : e)) };
  return { [HOURS]: segmentToJson(hours), [JOBS]: jobsToJson(jobs), [RESERVED]: jobsToJson(reserved) };
}

/** What `archive` writes beside each archive. */
export const REPORT_SIDECARS: SidecarMaker = {
  current: (sections) => readSections(sections) !== undefined,
  make: makeSections,
};
