import type { Failure, GpuSample } from '../../collection.js';
import type { FieldSpec } from '../../fields/field-spec.js';
import { type BlockingDeadline, type GpuQuery, type GpuRead, NO_DEADLINE, type Source } from '../source.js';
import type { Nvml } from './api.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { deviceCalls, type DeviceState } from './device-calls.js';
import { nvmlAnswers, readDevice, type LostGpu } from './device-read.js';
import { readMig } from './mig.js';
import { prepareMigGpm, readMigGpm, releaseGpm } from './mig-gpm.js';
import { GPM_METRICS, prepareGpm } from './nvml-only-readers.js';
import { devices, type Handles, readProcesses } from './processes.js';
import type { UtilizationReads } from './process-utilization.js';
import { describeReturn } from './return-codes.js';
import { nvmlOpener, type NvmlLocation } from './session.js';
import { nvmlStream } from './stream.js';

// NVML as a source: the same fields as nvidia-smi's, read in this process through koffi, with no
// child to start. Loaded (with koffi's native module) only when --source nvml is chosen.

export interface NvmlSourceOptions extends NvmlLocation {
  /** With GPM fields, how long a collection without an earlier GPM sample waits between its two. */
  gpmWindowMs: number;
  /** Bounds each stretch of NVML's calls (they block this thread); none by default. */
  deadline?: BlockingDeadline;
}

/** The daemon mode reads the energy counter (4.5 ms per GPU per call on an H200 host) this often. */
export const ENERGY_EVERY_MS = 10_000;
/** ... and the settings (device-read.ts; up to 1.7 ms a call there) this often, dcgm-exporter's default interval. */
export const SETTINGS_EVERY_MS = 30_000;
/** ... and compares GPM samples (0.48 ms per GPU there) at most this often. */
export const GPM_EVERY_MS = 1000;

/** What the source keeps from one collection to the next: each GPU's state, by index. */
export type Kept = Map<number, DeviceState>;

/** How one read is made: now, the GPM window, the energy cadence. */
export interface ReadTiming {
  gpmWindowMs: number;
  energyEveryMs: number;
  settingsEveryMs: number;
  gpmEveryMs: number;
  /** Set on the daemon mode's samples: when the read started. */
  takenAt?: number;
}

const isFailure = (value: Nvml | Failure): value is Failure => 'reason' in value;

/** What a read of `fields` asks NVML: worked out once per stream, not per sample. */
export interface ReadPlan {
  /** nvidia-smi's names of the fields, '' for those NVML does not answer (the source's `names`). */
  names: Record<string, string>;
  asked: FieldSpec[];
  /** The GPM fields of `asked`, by query (looked up once: the daemon mode read them anew every sample). */
  gpmAsked: string[];
}

export function readPlan(fields: readonly FieldSpec[]): ReadPlan {
  const asked = fields.filter(nvmlAnswers);
  return {
    names: Object.fromEntries(fields.map((field) => [field.query, nvmlAnswers(field) ? field.query : ''])),
    asked,
    gpmAsked: asked.filter((field) => GPM_METRICS[field.query] !== undefined).map((field) => field.query),
  };
}

/**
 * One read of every GPU: samples, and the GPUs that did not answer. `handles`, when given, are the
 * devices an earlier read of this session found (the daemon mode's stream: NVML's device count and
 * handles stay as they are while it is initialized, and asking cost 45 us a sample on an H200 host).
 */
export async function readGpus(
  nvml: Nvml,
  { names, asked, gpmAsked }: ReadPlan,
  query: Pick<GpuQuery, 'knownGpus'>,
  kept: Kept,
  timing: ReadTiming,
  handles?: Handles,
): Promise<GpuRead & { handles?: Handles }> {
  const all = handles ?? devices(nvml);
  if ('reason' in all) {
    // What was kept of each GPU may not hold once NVML answers again (a reloaded driver, a GPU reset).
    for (const state of kept.values()) releaseGpm(nvml, state);
    kept.clear();
    return { kind: 'failed', failure: all, learned: false };
  }
  const driver = nvml.driverVersion();
  const stateOf = (index: number) => kept.get(index) ?? kept.set(index, {}).get(index)!;
  // GPM compares two samples: a GPU (or MIG GPU instance) without an earlier one takes it now, and the
  // read waits one window for all of them.
  if (gpmAsked.length > 0) {
    const first = all.handles.flatMap(({ index, device }) =>
      device === undefined ? [] : [prepareGpm(nvml, device, stateOf(index)), prepareMigGpm(nvml, device, stateOf(index))],
    );
    if (first.some(Boolean)) await sleep(timing.gpmWindowMs);
  }
  const now = Date.now();
  const samples: GpuSample[] = [];
  const lost: LostGpu[] = [];
  for (const { index, rc, device } of all.handles) {
    const calls =
      device === undefined
        ? undefined
        : deviceCalls(nvml, device, stateOf(index), {
            now,
            energyEveryMs: timing.energyEveryMs,
            settingsEveryMs: timing.settingsEveryMs,
            gpmEveryMs: timing.gpmEveryMs,
          });
    const read = calls
      ? readDevice(calls, index, asked, driver.value)
      : { lost: `nvmlDeviceGetHandleByIndex_v2 returned ${describeReturn(rc)}` };
    // MIG devices ride on their GPU's sample: read only where that GPU answered.
    const mig = calls && !('lost' in read) ? readMig(calls) : undefined;
    const migActivity = calls && !('lost' in read) && gpmAsked.length > 0 ? readMigGpm(calls, mig, gpmAsked) : undefined;
    const result = 'lost' in read ? read : { ...read, ...(mig ? { mig } : {}), ...(migActivity ? { migActivity } : {}) };
    if ('lost' in result) {
      const state = kept.get(index);
      if (state) releaseGpm(nvml, state);
      kept.delete(index);
      const known = query.knownGpus.find((gpu) => gpu.gpu === String(index));
      lost.push({ gpu: String(index), uuid: known?.uuid ?? '', busId: known?.busId ?? '', message: result.lost });
    } else samples.push(timing.takenAt === undefined ? result : { ...result, takenAt: timing.takenAt });
  }
  if (samples.length === 0)
    return {
      kind: 'failed',
      learned: false,
      failure: { reason: 'gpu_lost', message: `no GPU could be read: GPU ${lost[0]?.gpu}: ${lost[0]?.message}` },
    };
  return { kind: 'ok', samples, problems: [], lost, fields: asked, names, learned: false, handles: all };
}

/**
 * NVML's CUDA version (major x 1000 + minor x 10) as nvidia-smi prints it, "13.1"; '' when this
 * driver has no such call or does not say, as nvidia-smi's source does.
 */
export function cudaVersionText(result: { rc: number; value?: number }): string {
  if (result.rc !== 0 || result.value === undefined || result.value <= 0) return '';
  return `${Math.floor(result.value / 1000)}.${Math.floor((result.value % 1000) / 10)}`;
}

/** NVML as a source. */
export function nvmlSource(options: NvmlSourceOptions): Source {
  const open = nvmlOpener(options);
  // One-shot runs read the energy counter every time; the daemon mode's one-shot recoveries share its cadence.
  const kept: Kept = new Map();
  // When each GPU's process utilization was read: the daemon mode's next read averages from there.
  const utilizationReads: UtilizationReads = new Map();
  const timing = { gpmWindowMs: options.gpmWindowMs, energyEveryMs: 0, settingsEveryMs: 0, gpmEveryMs: 0 };
  const deadline = options.deadline ?? NO_DEADLINE;
  /** A read under the deadline: NVML opened (the library loaded, nvmlInit_v2, the usual hang) and its calls made. */
  const guarded = async <T>(read: (nvml: Nvml) => T | Promise<T>, failed: (failure: Failure) => T): Promise<T> => {
    deadline.enter();
    try {
      const nvml = open();
      return isFailure(nvml) ? failed(nvml) : await read(nvml);
    } finally {
      deadline.leave();
    }
  };
  return {
    reads: () => ({
      gpus: (query) =>
        guarded(
          (nvml) => readGpus(nvml, readPlan(query.fields), query, kept, timing),
          (failure) => ({ kind: 'failed', failure, learned: false }),
        ),
      processes: () =>
        guarded(
          (nvml) => readProcesses(nvml, utilizationReads),
          (failure) => ({ kind: 'failed', failure }),
        ),
      cudaVersion: () =>
        guarded(
          (nvml) => cudaVersionText(nvml.cudaDriverVersion()),
          () => undefined,
        ),
    }),
    stream: (fields, _names, intervalMs) => {
      const plan = readPlan(fields);
      const daemonTiming = {
        gpmWindowMs: options.gpmWindowMs,
        energyEveryMs: ENERGY_EVERY_MS,
        settingsEveryMs: SETTINGS_EVERY_MS,
        gpmEveryMs: GPM_EVERY_MS,
      };
      let handles: Handles | undefined;
      return nvmlStream({
        open,
        read: async (nvml, takenAt) => {
          const read = await readGpus(nvml, plan, { knownGpus: [] }, kept, { ...daemonTiming, takenAt }, handles);
          handles = read.kind === 'ok' ? read.handles : undefined;
          return read;
        },
        intervalMs,
        deadline,
      });
    },
  };
}

// For bench/nvml-calls.mjs and bench/nvml-floor.cjs, which time NVML's calls through the bundle users run.
export { nvmlOpener } from './session.js';
export { FIELDS } from '../../fields/fields.js';
export { selectFields } from '../../fields/field-select.js';
