import type { ComputeApp, Failure, GpuRows, GpuSample, KnownGpu, RowProblem } from '../collection.js';
import type { FieldSpec } from '../fields/field-spec.js';
import type { XidEvents } from '../xid/watch.js';

// What a data source gives the pipeline. Each source is a folder beside this file that alone knows
// its quirks; the pipeline sees only these types (src/sources/sources.ts picks one).

/** One read of every GPU. `names` is what the source learned about the driver's field names, kept in the state. */
export type GpuRead =
  | (GpuRows & { kind: 'ok'; names: Record<string, string>; learned: boolean })
  | { kind: 'failed'; failure: Failure; learned: boolean; names?: Record<string, string> };

/** One read of the compute processes. */
export type ProcessRead = { kind: 'ok'; apps: ComputeApp[]; skipped: number } | { kind: 'failed'; failure: Failure };

/** What a GPU read may use from the previous run. */
export interface GpuQuery {
  fields: readonly FieldSpec[];
  /** Names this driver accepted last time, if known. */
  knownNames?: Record<string, string>;
  /** GPUs the last good run saw (to ask each alone when one is lost). */
  knownGpus: readonly KnownGpu[];
}

/** The reads of one collection: they share one deadline (--timeout bounds the whole collection). */
export interface SourceReads {
  gpus(query: GpuQuery): Promise<GpuRead>;
  processes(): Promise<ProcessRead>;
  /**
   * The CUDA version the driver supports ("13.0"): '' when this driver does not say, undefined when
   * asking failed (ask again next run). Sources that cannot tell leave it out.
   */
  cudaVersion?(): Promise<string | undefined>;
  /** The pids of the children this collection's reads killed and saw not end (nvidia-smi asleep in the driver). */
  stuck?(): readonly number[];
}

/**
 * A deadline on code that blocks this thread (NVML's calls, made in this process, which no timer can
 * interrupt): enter() before a stretch of such calls, leave() after; nested stretches count as one.
 * One that overruns ends the process with the timeout failure file (src/collect/watchdog.ts).
 */
export interface BlockingDeadline {
  enter(): void;
  leave(): void;
}

/** No deadline (sources that block nothing run their calls under their own). */
export const NO_DEADLINE: BlockingDeadline = Object.freeze({ enter: () => {}, leave: () => {} });

/** Rows every interval from one long-running reader, until it breaks or is stopped. */
export interface RowStream {
  /** What the messages call it ("nvidia-smi -lms"). */
  what: string;
  /** One entry per line read: a sample, a row that is not one, or undefined for a line that carries none. */
  rows: AsyncIterable<GpuSample | RowProblem | undefined>;
  stop(): void;
  /** Why it ended (after stop() too: the caller knows it stopped it). */
  ended: Promise<Failure>;
  /** The Xid events the reader was told of since the last call (NVML's event set); absent where it watches none. */
  xidEvents?(): XidEvents | undefined;
}

/** A data source. */
export interface Source {
  /** Starts one collection's reads; the deadline starts now. */
  reads(): SourceReads;
  /** Streams `fields` (asked by `names`) every `intervalMs`. */
  stream(fields: readonly FieldSpec[], names: Record<string, string>, intervalMs: number): RowStream;
  /**
   * A one-shot run is done with the source: `succeeded` when it published what it read, `stuck` when
   * an nvidia-smi stuck in the driver is known (this run's or an earlier one's, src/collect/stuck.ts).
   * What the source keeps for the next run's start is kept here (nvidia-smi: its head start); never throws.
   */
  settle?(end: { succeeded: boolean; stuck: boolean }): void;
}
