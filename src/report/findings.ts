/** A finding: what kind, where, and the numbers that show it. */
export interface Finding {
  kind: 'memory_growth' | 'idle' | 'low_use' | 'held_idle' | 'reserved_idle' | 'imbalance' | 'collection_gaps' | 'errors';
  host: string;
  task_id: string;
  gpu_id: string;
  gpu_uuid: string;
  /** One sentence for people. */
  summary: string;
  [evidence: string]: unknown;
}

/**
 * Thresholds for the findings, tuned on generated weeks of 15-second samples of 8 GPUs with steady
 * training and inference loads (noise, allocator caching, evaluation spikes) that must yield nothing,
 * and planted leaks, idle stretches, imbalance, gaps and errors that must be found.
 */
export const FINDING_THRESHOLDS = {
  /** Memory growth: at least this many hourly maxima spanning at least this many hours, */
  growthMinHours: 12,
  /** growing at least this fast (robust slope, MiB per day), */
  growthMinMibPerDay: 500,
  /** by at least this much over the span (MiB), */
  growthMinTotalMib: 1024,
  /** and consistently: Kendall's tau of the hourly maxima against time at least this (1 = always rising). */
  growthMinTau: 0.5,
  /** Idle: hours in a row averaging under this utilization (%) */
  idleMaxUtilization: 2,
  /** while this much memory stays allocated (MiB), */
  idleMinMemoryMib: 1024,
  /** for at least this many hours. */
  idleMinHours: 3,
  /** Low use: hours averaging from the idle utilization up to under this (%), holding the idle memory, */
  lowUseMaxUtilization: 15,
  /** at least this many in all, */
  lowUseMinHours: 24,
  /** and at least this share of the hours it held that memory: mostly low, not an inference GPU's quiet nights, which add up to days over a week. */
  lowUseMinShare: 0.5,
  /** Imbalance: GPUs of one host and task whose average utilization differs by this many points, */
  imbalanceMinSpread: 40,
  /** the busiest averaging at least this (%). */
  imbalanceMinBusiest: 50,
  /** Gaps: a gap is longer than this many collection intervals; reported from this many missing samples. */
  gapIntervals: 2.5,
  gapMinMissing: 3,
  /** ... once the interval was learned from at least this many spacings. */
  gapMinSpacings: 3,
};
