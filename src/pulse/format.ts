import type { Pulse } from './classify.js';

const pct = (x: number) => `${Math.round(x * 100)} %`;

/** The human report: verdict, evidence, next steps. */
export function formatPulse(pulse: Pulse): string {
  const e = pulse.evidence;
  const lines = [
    `GPU ${pulse.gpu}: ${pulse.verdict}`,
    `  ${pulse.explanation}`,
    '',
    `  samples              ${e.samples} ${e.intervalMs !== undefined ? `every ${e.intervalMs} ms` : '(their timestamps do not advance: interval unknown)'}`,
    `  utilization          mean ${e.utilizationMean.toFixed(1)} %, busy (>= 50 %) ${pct(e.dutyCycle)}, near 0 ${pct(e.nearZeroShare)}, near 100 ${pct(e.nearFullShare)}, ${e.swingsPer10.toFixed(1)} swings per 10 samples`,
    `  bursts               ${e.bursts}${e.burstSpacingMs !== undefined ? `, one every ${(e.burstSpacingMs / 1000).toFixed(1)} s` : ''}${e.burstPeakMedian !== undefined ? `, median peak ${e.burstPeakMedian} %` : ''}`,
    ...(e.cappedWhileNearZeroShare !== undefined ? [`  power cap while ~0   ${pct(e.cappedWhileNearZeroShare)} of near-0 samples`] : []),
    ...(e.powerMeanW !== undefined
      ? [
          `  power                mean ${e.powerMeanW.toFixed(0)} W${e.powerLimitW ? ` of ${e.powerLimitW.toFixed(0)} W (${pct(e.powerShare!)})` : ''}`,
        ]
      : []),
    ...(e.smClockMeanMHz !== undefined
      ? [
          `  SM clock             mean ${e.smClockMeanMHz.toFixed(0)} MHz${e.smClockMaxMHz ? ` of ${e.smClockMaxMHz} MHz max` : ''}${e.smClockShare !== undefined ? ` (${pct(e.smClockShare)} while busy)` : ''}`,
        ]
      : []),
    ...(e.smActiveMean !== undefined
      ? [
          `  GPM                  SM active ${e.smActiveMean.toFixed(1)} %${e.tensorActiveMean !== undefined ? `, tensor active ${e.tensorActiveMean.toFixed(1)} %` : ''}`,
        ]
      : []),
    `  clock event reasons  ${
      Object.entries(e.activeReasons)
        .map(([r, s]) => `${r} ${pct(s)}`)
        .join(', ') || 'none'
    }`,
    ...pulse.notes.map((n) => `  note: ${n}`),
    '',
    '  next steps:',
    ...pulse.nextSteps.map((s) => `  - ${s}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** A number kept to `digits` decimals (undefined stays undefined): JSON that people read carries no float noise. */
const rounded = (value: number | undefined, digits: number): number | undefined =>
  value === undefined ? undefined : Math.round(value * 10 ** digits) / 10 ** digits;
/** Shares (0-1) to 3 decimals, measured watts, MHz and percent to 1. */
const share = (value: number | undefined) => rounded(value, 3);
const measure = (value: number | undefined) => rounded(value, 1);

/** --json: the verdict and its evidence with snake_case keys, as report's JSON has them; each key named here, so renaming a field cannot rename a key. */
export function pulseJson(pulse: Pulse, skippedRows: number): object {
  const e = pulse.evidence;
  return {
    gpu: pulse.gpu,
    verdict: pulse.verdict,
    explanation: pulse.explanation,
    notes: pulse.notes,
    next_steps: pulse.nextSteps,
    evidence: {
      samples: e.samples,
      interval_ms: e.intervalMs ?? null,
      utilization_mean: measure(e.utilizationMean),
      duty_cycle: share(e.dutyCycle),
      near_zero_share: share(e.nearZeroShare),
      near_full_share: share(e.nearFullShare),
      swings_per_10: measure(e.swingsPer10),
      bursts: e.bursts,
      burst_spacing_ms: e.burstSpacingMs,
      burst_peak_median: measure(e.burstPeakMedian),
      capped_while_near_zero_share: share(e.cappedWhileNearZeroShare),
      power_mean_w: measure(e.powerMeanW),
      power_limit_w: measure(e.powerLimitW),
      power_share: share(e.powerShare),
      sm_clock_mean_mhz: measure(e.smClockMeanMHz),
      sm_clock_max_mhz: measure(e.smClockMaxMHz),
      sm_clock_share: share(e.smClockShare),
      sm_active_mean: measure(e.smActiveMean),
      tensor_active_mean: measure(e.tensorActiveMean),
      active_reasons: Object.fromEntries(Object.entries(e.activeReasons).map(([reason, value]) => [reason, share(value)])),
    },
    skipped_rows: skippedRows,
  };
}
