import type { HistoryRow } from '../csvlog/read.js';
import { csvColumnOf } from '../csvlog/columns.js';
import type { MetricFamily, MetricSample } from '../exposition/families.js';
import { FIELDS } from '../fields/fields.js';
import { FIXED_FAMILIES } from '../metrics/metrics-catalog.js';
import { scaleDecimal } from '../sources/nvidia-smi/rows.js';

// The families a CSV trail holds, under the names, types, help and labels the textfile gives them:
// each value column's family comes from the field table (its metric, help and unit factor), the
// others from the catalog of fixed families. One sample of the trail (the rows of one host, task
// and time) becomes their series here; export.ts writes them one family at a time.

type Labels = MetricSample['labels'];

/** The rows of one collection: one host and task at one time, a row per GPU (or one, when none was known). */
export interface TrailSample {
  host: string;
  task: string;
  time: number;
  rows: HistoryRow[];
}

/** One family of the export: its header, and its series in one sample of the trail. */
export interface ExportFamily {
  family: Pick<MetricFamily, 'name' | 'type' | 'help'>;
  /** Calls `emit` for each series the sample has in this family; `base` is the host's and task's labels, `key` names them. */
  samples: (sample: TrailSample, base: Labels, emit: (key: string, labels: () => Labels, value: number) => void) => void;
}

/** The HistoryRow value that holds each logged field (read.ts names the same columns by the same queries). */
const VALUE_FIELDS: readonly [key: 'utilization' | 'memoryUsedMiB' | 'memoryTotalMiB' | 'powerW' | 'temperatureC', query: string][] = [
  ['utilization', 'utilization.gpu'],
  ['memoryUsedMiB', 'memory.used'],
  ['memoryTotalMiB', 'memory.total'],
  ['powerW', 'power.draw'],
  ['temperatureC', 'temperature.gpu'],
];

/** A collection succeeded when some GPU's row says ok; a failed one leaves a row per known GPU with the reason (docs/csv.md). */
const succeeded = (sample: TrailSample): boolean => sample.rows.some((row) => row.status === 'ok');

const gpuKey = (row: HistoryRow) => `${row.gpu}\u0000${row.uuid}`;
const gpuLabels = (base: Labels, row: HistoryRow, more: Labels = []): Labels => [...base, ['gpu', row.gpu], ['uuid', row.uuid], ...more];

/** A value column's family: the field table's metric, in base units as the textfile has them (45 % -> 0.45). */
function valueFamily(key: (typeof VALUE_FIELDS)[number][0], query: string): ExportFamily {
  const field = FIELDS.find((f) => f.query === query);
  // A field that is not logged (csvColumnOf throws) or has no family is a programmer's error, caught by any test.
  csvColumnOf(query);
  if (!field?.metric) throw new Error(`--query-gpu field ${query} has no metric family`);
  const factor = field.factor ?? 1;
  return {
    family: { name: field.metric, type: field.type ?? 'gauge', help: field.help ?? '' },
    samples: (sample, base, emit) => {
      for (const row of sample.rows) {
        const value = row[key];
        if (row.status !== 'ok' || value === undefined) continue;
        // As the collector scales the cell nvidia-smi printed: 57 % is 0.57, not 57 * 0.01.
        emit(gpuKey(row), () => gpuLabels(base, row), factor === 1 ? value : scaleDecimal(String(value), factor));
      }
    },
  };
}

/**
 * The jobs a row's cell names (its `jobs` or its `reserved` column), as the textfile writes them: an
 * info series per job and GPU, and the count of jobs on the GPU (those not named too). A row whose
 * cell is absent (not read) has neither.
 */
function jobFamilies(
  info: ExportFamily['family'],
  count: ExportFamily['family'],
  cellOf: (row: HistoryRow) => { jobs: readonly { kind: string; id: string; user: string }[]; dropped: number } | undefined,
): ExportFamily[] {
  return [
    {
      family: info,
      samples: (sample, base, emit) => {
        for (const row of sample.rows) {
          const cell = cellOf(row);
          if (row.status !== 'ok' || !cell) continue;
          const seen = new Set<string>();
          for (const job of cell.jobs) {
            const key = `${gpuKey(row)}\u0000${job.kind}\u0000${job.id}\u0000${job.user}`;
            if (seen.has(key)) continue;
            seen.add(key);
            const more: Labels = [
              ['job_kind', job.kind],
              ['job_id', job.id],
              ['user', job.user],
            ];
            emit(key, () => gpuLabels(base, row, more), 1);
          }
        }
      },
    },
    {
      family: count,
      samples: (sample, base, emit) => {
        for (const row of sample.rows) {
          const cell = cellOf(row);
          if (row.status === 'ok' && cell) emit(gpuKey(row), () => gpuLabels(base, row), cell.jobs.length + cell.dropped);
        }
      },
    },
  ];
}

/** Every family the export writes, in the textfile's order. */
export const EXPORT_FAMILIES: readonly ExportFamily[] = [
  {
    // A GPU the collection could not read (gpu_lost, unparsable_output) is 0; a failed collection has no such series.
    family: FIXED_FAMILIES.up,
    samples: (sample, base, emit) => {
      if (!succeeded(sample)) return;
      for (const row of sample.rows)
        if (row.gpu !== '' || row.uuid !== '') emit(gpuKey(row), () => gpuLabels(base, row), row.status === 'ok' ? 1 : 0);
    },
  },
  ...VALUE_FIELDS.map(([key, query]) => valueFamily(key, query)),
  ...jobFamilies(FIXED_FAMILIES.jobInfo, FIXED_FAMILIES.jobs, (row) => row.jobs),
  // Who reserved each GPU (the `reserved` column), as the holders: where the row says (a reserved
  // cell), an info series per job and the count; then the host's jobs whose reservation could not
  // be read, once per sample (the cell repeats it on each GPU's row).
  ...jobFamilies(FIXED_FAMILIES.reservationInfo, FIXED_FAMILIES.reservations, (row) => row.reserved),
  {
    family: FIXED_FAMILIES.reservationUnknown,
    samples: (sample, base, emit) => {
      const read = sample.rows.filter((row) => row.status === 'ok' && row.reserved);
      if (read.length > 0) emit('', () => base, Math.max(...read.map((row) => row.reserved!.unknown)));
    },
  },
  {
    // The health of each collection: 0 where the trail kept the rows of a failed one, so a failure reads as one in the store too.
    family: FIXED_FAMILIES.success,
    samples: (sample, base, emit) => emit('', () => base, succeeded(sample) ? 1 : 0),
  },
  {
    family: FIXED_FAMILIES.error,
    samples: (sample, base, emit) => {
      if (succeeded(sample)) return;
      const reason = sample.rows[0]!.status;
      emit(reason, () => [...base, ['reason', reason]], 1);
    },
  },
];
