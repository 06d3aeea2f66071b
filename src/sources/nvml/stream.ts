import type { Failure, GpuSample, RowProblem } from '../../collection.js';
import type { XidLine } from '../../xid/parse.js';
import type { XidEvents } from '../../xid/watch.js';
import type { BlockingDeadline, GpuRead, RowStream } from '../source.js';
import type { Nvml } from './api.js';
import { openXidEvents, type XidEventSet } from './xid-events.js';

// The daemon mode's reader on NVML: a read of every GPU each interval, in this process, and the Xid
// events NVML delivered meanwhile.

/** Xid events kept for the daemon between two of its looks at most (it looks every sample). */
const PENDING_MAX = 1024;

/** What the stream is given: NVML opened (or why not), one read, the cadence and the deadline on NVML's calls. */
export interface NvmlStreamInput {
  open: () => Nvml | Failure;
  read: (nvml: Nvml, takenAt: number) => Promise<GpuRead>;
  intervalMs: number;
  deadline: BlockingDeadline;
}

/** Samples every `intervalMs` from NVML, until stopped or NVML fails as a whole. */
export function nvmlStream({ open, read: readAll, intervalMs, deadline }: NvmlStreamInput): RowStream {
  let stopped = false;
  let wake = () => {};
  let end: (failure: Failure) => void = () => {};
  const ended = new Promise<Failure>((resolve) => {
    end = resolve;
  });
  /** The Xid event set, once opened (undefined: none of the GPUs registers, and it is not asked again). */
  let xids: XidEventSet | undefined | 'not-yet' = 'not-yet';
  let pending: XidEvents | undefined;
  const keep = (drained: XidEvents) => {
    const events: XidLine[] = [...(pending?.events ?? []), ...drained.events].slice(0, PENDING_MAX);
    pending = { buses: drained.buses, events };
  };
  /** One sample's calls, under the deadline: the read, then the Xid events (registered with the first good read). */
  const sample = async (takenAt: number): Promise<GpuRead> => {
    deadline.enter();
    try {
      const nvml = open();
      if ('reason' in nvml) return { kind: 'failed', failure: nvml, learned: false };
      const read = await readAll(nvml, takenAt);
      if (read.kind === 'ok' && xids === 'not-yet') xids = openXidEvents(nvml);
      if (xids !== undefined && xids !== 'not-yet') keep(xids.drain());
      return read;
    } finally {
      deadline.leave();
    }
  };
  async function* rows(): AsyncGenerator<GpuSample | RowProblem | undefined> {
    let next = Date.now();
    try {
      while (!stopped) {
        const read = await sample(Date.now());
        if (read.kind === 'failed') {
          stopped = true;
          end(read.failure);
          return;
        }
        if (read.lost.length > 0) {
          // As when nvidia-smi -lms exits 15: the loop's one-shot reads then name the lost GPU
          // (nvidia_gpu_up 0) each interval while the others keep reporting, until it answers again.
          stopped = true;
          end({ reason: 'gpu_lost', message: `GPU ${read.lost[0]!.gpu}: ${read.lost[0]!.message}` });
          return;
        }
        yield* read.samples;
        // Keep the cadence: the next sample is due one interval after this one was due.
        next = Math.max(next + intervalMs, Date.now());
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, next - Date.now());
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      deadline.enter();
      try {
        if (xids !== undefined && xids !== 'not-yet') xids.free();
      } finally {
        deadline.leave();
      }
    }
  }
  return {
    what: 'NVML',
    rows: rows(),
    stop: () => {
      if (!stopped) end({ reason: 'nvml_unknown_error', message: 'NVML reader stopped' });
      stopped = true;
      wake();
    },
    ended,
    xidEvents: () => {
      const drained = pending;
      pending = pending && { buses: pending.buses, events: [] };
      return drained;
    },
  };
}
