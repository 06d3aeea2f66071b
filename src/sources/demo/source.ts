import type { ComputeApp, Failure, GpuSample, RowProblem } from '../../collection.js';
import { CLOCK_EVENT_REASON_BITS, fieldNames, type FieldSpec } from '../../fields/field-spec.js';
import { parseComputeApps } from '../nvidia-smi/compute-apps.js';
import { sampleFromCells } from '../nvidia-smi/rows.js';
import type { RowStream, Source } from '../source.js';
import { DEMO_HOSTS, parseRecorded, readRecording, type DemoHostName, type Recorded } from './recordings.js';

// A source that needs no GPU: one recorded 2 x H200 host (every field, its processes), whose moving
// fields follow real -lms series chosen by the wall clock, and whose counters grow with it. Every
// series it feeds carries source="demo" (commands/collect.ts), so it is never taken for a host.

export interface DemoOptions {
  /** The folder of recordings (dist/demo in the package). */
  dir: string;
  /** Milliseconds since the epoch: the same `now` gives the same values. */
  now: () => number;
  /** Which recorded host (default: two H200s under load). */
  host?: DemoHostName;
}

/** When the capture was recorded: its counters grow from there. */
const RECORDED_AT = Date.UTC(2026, 10, 29, 18, 22);
const REASON_BITS = CLOCK_EVENT_REASON_BITS;
const MIB = 1024 * 1024;

interface Demo {
  /** The series' period: the -lms interval they were recorded with. */
  stepMs: number;
  gpus: Recorded;
  series: { names: string[]; byGpu: Map<string, string[][]> };
  apps: ComputeApp[];
}

function loadDemo(dir: string, host: DemoHostName): Demo {
  const files = DEMO_HOSTS[host];
  const series = files.series.map((name) => parseRecorded(readRecording(dir, name)));
  const names = series[0]!.names;
  const byGpu = new Map<string, string[][]>();
  for (const row of series.flatMap((s) => s.rows))
    byGpu.set(row[names.indexOf('index')]!, [...(byGpu.get(row[names.indexOf('index')]!) ?? []), row]);
  const apps = parseRecorded(readRecording(dir, files.processes));
  const col = (row: string[], name: string) => row[apps.names.indexOf(name)] ?? '';
  // As --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory prints them, for its parser.
  const appsText = apps.rows
    .map((row) => [col(row, 'gpu_uuid'), col(row, 'pid'), col(row, 'process_name'), col(row, 'used_gpu_memory')].join(', '))
    .join('\n');
  const gpus = parseRecorded(readRecording(dir, files.gpus));
  return { stepMs: files.stepMs, gpus, series: { names, byGpu }, apps: parseComputeApps(appsText).apps };
}

/** The series row of the GPU `captured` at `now`, as names -> cells (empty where the series has no row). */
function movingAt(demo: Demo, captured: readonly string[], now: number): Map<string, string> {
  const rows = demo.series.byGpu.get(captured[demo.gpus.names.indexOf('index')] ?? '') ?? [];
  const row = rows[Math.floor(now / demo.stepMs) % Math.max(1, rows.length)] ?? [];
  return new Map(demo.series.names.map((name, i) => [name, row[i]!]));
}

/**
 * The recorded processes at `now`, each GPU's scaled to what its series says is used then: the
 * processes were captured under one load and the series cycle through others (idle among them), and a
 * process never holds more than its GPU has in use. One whose share rounds to nothing has ended.
 */
function appsAt(demo: Demo, now: number): ComputeApp[] {
  const usedMib = new Map(
    demo.gpus.rows.map((captured) => {
      const used = movingAt(demo, captured, now).get('memory.used') ?? captured[demo.gpus.names.indexOf('memory.used')];
      return [captured[demo.gpus.names.indexOf('uuid')] ?? '', Number(used)] as const;
    }),
  );
  return demo.apps.flatMap((app) => {
    const used = usedMib.get(app.uuid);
    const held = demo.apps.filter((other) => other.uuid === app.uuid).reduce((sum, other) => sum + (other.memoryBytes ?? 0), 0);
    if (app.memoryBytes === undefined || used === undefined || !Number.isFinite(used) || held <= used * MIB) return [app];
    const memoryMib = Math.floor((app.memoryBytes / held) * used);
    return memoryMib > 0 ? [{ ...app, memoryBytes: memoryMib * MIB }] : [];
  });
}

const reasonsOf = (cell: string | undefined): bigint => (/^0x[0-9a-fA-F]+$/.test(cell ?? '') ? BigInt(cell!) : 0n);

/** One GPU's cells for `fields` at `now`: the capture's, the series' where it moves, counters grown. */
export function demoCells(demo: Demo, captured: readonly string[], fields: readonly FieldSpec[], now: number): string[] {
  const at = (name: string) => captured[demo.gpus.names.indexOf(name)];
  const rows = demo.series.byGpu.get(at('index') ?? '') ?? [];
  const moving = movingAt(demo, captured, now);
  const reasons = reasonsOf(moving.get('clocks_event_reasons.active'));
  const elapsedUs = Math.max(0, now - RECORDED_AT) * 1000;
  const cell = (field: FieldSpec): string => {
    const names = fieldNames(field);
    const movingName = names.find((name) => moving.get(name) !== undefined);
    if (movingName) return moving.get(movingName)!;
    const [kind, reason] = field.query.split('.') as [string, string];
    if (kind === 'clocks_event_reasons' && REASON_BITS[reason] !== undefined)
      return reasons & REASON_BITS[reason] ? 'Active' : 'Not Active';
    if (kind === 'clocks_event_reasons_counters' && REASON_BITS[reason] !== undefined) {
      // Grows at the share of the series' time the reason was active: monotonic in `now`.
      const share = rows.filter(
        (r) => reasonsOf(r[demo.series.names.indexOf('clocks_event_reasons.active')]) & REASON_BITS[reason]!,
      ).length;
      return String(Number(at(field.query) ?? 0) + Math.round((elapsedUs * share) / Math.max(1, rows.length)));
    }
    if (field.query === 'memory.free' && moving.has('memory.used'))
      return String(Number(at('memory.total')) - Number(moving.get('memory.used')) - Number(at('memory.reserved') ?? 0));
    const recorded = names.map(at).find((value) => value !== undefined);
    return recorded ?? '[N/A]';
  };
  return fields.map(cell);
}

/** The demo's samples of every GPU at `now`. */
const samplesAt = (demo: Demo, fields: readonly FieldSpec[], now: number): (GpuSample | RowProblem)[] =>
  demo.gpus.rows.map((captured) => {
    const cells = demoCells(demo, captured, fields, now);
    return sampleFromCells(fields, cells, cells.join(', '));
  });

/** A stream of the demo's samples every `intervalMs`, until stopped. */
function demoStream(demo: Demo, fields: readonly FieldSpec[], intervalMs: number, now: () => number): RowStream {
  let stopped = false;
  let wake = () => {};
  let end: (failure: Failure) => void = () => {};
  const ended = new Promise<Failure>((resolve) => {
    end = resolve;
  });
  async function* rows() {
    while (!stopped) {
      const takenAt = now();
      for (const row of samplesAt(demo, fields, takenAt)) yield 'readings' in row ? { ...row, takenAt } : row;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, intervalMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }
  return {
    what: 'demo replay',
    rows: rows(),
    stop: () => {
      stopped = true;
      wake();
      end({ reason: 'nvidia_smi_failed', message: 'demo replay stopped' });
    },
    ended,
  };
}

/** The demo as a source: reads and streams the recordings, never runs nvidia-smi. */
export function demoSource(options: DemoOptions): Source {
  const demo = loadDemo(options.dir, options.host ?? 'h200x2-load');
  return {
    reads: () => ({
      gpus: async (query) => {
        const { samples, problems } = partition(samplesAt(demo, query.fields, options.now()));
        const names = Object.fromEntries(query.fields.map((field) => [field.query, field.query]));
        return { kind: 'ok', samples, problems, lost: [], fields: [...query.fields], names, learned: false };
      },
      processes: async () => ({ kind: 'ok', apps: appsAt(demo, options.now()), skipped: 0 }),
    }),
    stream: (fields, _names, intervalMs) => demoStream(demo, fields, intervalMs, options.now),
  };
}

function partition(rows: (GpuSample | RowProblem)[]): { samples: GpuSample[]; problems: RowProblem[] } {
  const samples = rows.filter((row): row is GpuSample => 'readings' in row);
  return { samples, problems: rows.filter((row): row is RowProblem => !('readings' in row)) };
}
