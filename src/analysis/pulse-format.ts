import type { Pulse } from './pulse.js';

const pct = (x: number) => `${Math.round(x * 100)} %`;

/** The human report: verdict, evidence, next steps. */
export function formatPulse(pulse: Pulse): string {
  const e = pulse.evidence;
  const lines = [
    `GPU ${pulse.gpu}: ${pulse.verdict}`,
    `  ${pulse.explanation}`,
    '',
    `  samples              ${e.samples} every ${e.intervalMs} ms`,
    `  utilization          mean ${e.utilizationMean.toFixed(1)} %, busy (>= 50 %) ${pct(e.dutyCycle)}, near 0 ${pct(e.nearZeroShare)}, near 100 ${pct(e.nearFullShare)}, ${e.swingsPer10.toFixed(1)} swings per 10 samples`,
    `  bursts               ${e.bursts}${e.burstSpacingMs !== undefined ? `, one every ${(e.burstSpacingMs / 1000).toFixed(1)} s` : ''}${e.burstPeakMedian !== undefined ? `, median peak ${e.burstPeakMedian} %` : ''}`,
    ...(e.cappedWhileNearZeroShare !== undefined ? [`  power cap while ~0   ${pct(e.cappedWhileNearZeroShare)} of near-0 samples`] : []),
    ...(e.powerMeanW !== undefined ? [`  power                mean ${e.powerMeanW.toFixed(0)} W${e.powerLimitW ? ` of ${e.powerLimitW.toFixed(0)} W (${pct(e.powerShare!)})` : ''}`] : []),
    ...(e.smClockMeanMHz !== undefined ? [`  SM clock             mean ${e.smClockMeanMHz.toFixed(0)} MHz${e.smClockMaxMHz ? ` of ${e.smClockMaxMHz} MHz max` : ''}${e.smClockShare !== undefined ? ` (${pct(e.smClockShare)} while busy)` : ''}`] : []),
    `  clock event reasons  ${Object.entries(e.activeReasons).map(([r, s]) => `${r} ${pct(s)}`).join(', ') || 'none'}`,
    ...pulse.notes.map((n) => `  note: ${n}`),
    '',
    '  next steps:',
    ...pulse.nextSteps.map((s) => `  - ${s}`),
  ];
  return `${lines.join('\n')}\n`;
}

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
      interval_ms: e.intervalMs,
      utilization_mean: e.utilizationMean,
      duty_cycle: e.dutyCycle,
      near_zero_share: e.nearZeroShare,
      near_full_share: e.nearFullShare,
      swings_per_10: e.swingsPer10,
      bursts: e.bursts,
      burst_spacing_ms: e.burstSpacingMs,
      burst_peak_median: e.burstPeakMedian,
      capped_while_near_zero_share: e.cappedWhileNearZeroShare,
      power_mean_w: e.powerMeanW,
      power_limit_w: e.powerLimitW,
      power_share: e.powerShare,
      sm_clock_mean_mhz: e.smClockMeanMHz,
      sm_clock_max_mhz: e.smClockMaxMHz,
      sm_clock_share: e.smClockShare,
      active_reasons: e.activeReasons,
    },
    skipped_rows: skippedRows,
  };
}
