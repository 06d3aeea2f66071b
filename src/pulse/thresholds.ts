/**
 * Thresholds, tuned on the H200 recordings in test/fixtures/series that docs/pulse.md lists as the
 * tuning set (idle, saturated, loops busy 30/60/85 % of each 0.5 s, short bursts with long waits,
 * host-device copies, tiny kernels); the held-out recordings there test them.
 */
export const PULSE_THRESHOLDS = {
  /** Utilization at or under this (%) counts as "near 0"; at or over `high` as busy. */
  nearZero: 5,
  high: 50,
  nearFull: 90,
  /** Mean utilization (%) under which a GPU is idle, if its power agrees. */
  idleMean: 5,
  /** Power at or under this share of the limit is "near idle" (an H200 idles at 77-130 W of 700 W). */
  idlePowerShare: 0.25,
  /** Without a power limit: power at or under this multiple of the lowest power seen at near-0 utilization is "near idle" (a CUDA context alone takes an H200 from 77 to ~120 W). */
  idleFloorFactor: 1.75,
  /** Mean utilization (%) at or over which a GPU is saturated, with under `lowShareSaturated` of samples under `high`. */
  saturatedMean: 85,
  lowShareSaturated: 0.1,
  /** Data-starved: at least this share of samples under `high`, and at least this many swings across it per 10 samples. */
  starvedLowShare: 0.15,
  starvedSwingsPer10: 1,
  /** Throttled: busy, SM clock at or under this share of its maximum, throttling reasons in at least `throttledShare` of busy samples. */
  throttledClockShare: 0.85,
  throttledShare: 0.3,
  /**
   * Copies or tiny kernels: utilization mean at least this (%), steady (near 0 in under `burstGapShare`
   * of samples), while power stays near idle. Pageable host-to-device copies read 12-16 %.
   */
  busyAtIdlePowerMean: 10,
  /**
   * With GPM (the NVML source): SM activity (%) under this while utilization reads at least
   * `busyAtIdlePowerMean` is copies or tiny kernels, whatever the power (an H200 under host-to-device
   * copies only: utilization 100 %, SM active 0 %; under bf16 matmuls: SM active 96 %).
   */
  gpmLowSmActive: 10,
  /** Bursts: at least this many runs above near-zero, near 0 in at least this share of samples, median peak at least this (%). */
  burstsMin: 3,
  burstGapShare: 0.3,
  burstPeak: 10,
  /** Power cap hit (sw_power_cap) in at least this share of the (at least 5) near-0 samples: heavy work ran between samples. */
  cappedWhileNearZeroShare: 0.25,
};
