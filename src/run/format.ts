import type { RunSummary } from './summary.js';

const pct = (share: number) => `${Math.round(share * 100)} %`;
const one = (value: number) => value.toFixed(1);

/** "1 h 02 min", "3 min 05 s", "12.3 s". */
export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${one(seconds)} s`;
  const whole = Math.round(seconds);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  return h > 0 ? `${h} h ${String(m).padStart(2, '0')} min` : `${m} min ${String(s).padStart(2, '0')} s`;
}

/** Watt-hours to 3 significant digits at least one decimal: a short test run's 0.0358 Wh does not read as 0. */
const energyText = (wh: number) => (wh >= 100 ? `${wh.toFixed(0)} Wh` : `${wh.toPrecision(3)} Wh`);

/** How the job's GPUs were chosen, in words. */
const SELECTION_TEXT: Record<RunSummary['selection'], string> = {
  CUDA_VISIBLE_DEVICES: 'by CUDA_VISIBLE_DEVICES',
  'process tree': "by the job's processes",
  all: "all: none of the job's processes seen on one",
};

const ENERGY_FROM_TEXT = { counter: "the boards' energy counters", power: 'power x time', mixed: 'counters where read, else power x time' };

/** Where the energy figure comes from; with the counters, how much of it no counter reading covered. */
function energySource(summary: RunSummary): string {
  const from = ENERGY_FROM_TEXT[summary.energyFrom ?? 'power'];
  const estimated = summary.energyEstimatedSeconds ?? 0;
  return summary.energyFrom !== 'power' && estimated >= 0.05
    ? `${from}; power x time for the ${one(estimated)} GPU-s no reading covers`
    : from;
}

/** How the job ended, in words. */
const exitText = (summary: RunSummary) =>
  summary.exit.signal ? `killed by ${summary.exit.signal} (status ${summary.exit.status})` : `exit status ${summary.exit.status}`;

/** The summary printed on stderr when the job ends. */
export function formatSummary(summary: RunSummary): string {
  const lines = [`gpu-textfile run: ${summary.task}: ${exitText(summary)} after ${formatDuration(summary.durationSeconds)}`];
  if (summary.noGpuData) lines.push(`  ${summary.noGpuData}`);
  else {
    lines.push(
      `  GPUs            ${summary.gpus.map((g) => g.gpu).join(', ')} (${SELECTION_TEXT[summary.selection]}), ${summary.gpuHours.toFixed(3)} GPU-hours`,
      `  utilization     mean ${one(summary.utilizationMean!)} %, p95 ${summary.utilizationP95} %, idle ${pct(summary.idleShare!)} of samples`,
      ...(summary.energyWh !== undefined ? [`  energy          ${energyText(summary.energyWh)} (${energySource(summary)})`] : []),
    );
    for (const gpu of summary.gpus) {
      const memory = gpu.peakMemoryMiB !== undefined ? `, peak memory ${Math.round(gpu.peakMemoryMiB)} MiB` : '';
      lines.push(
        `  ${`GPU ${gpu.gpu}`.padEnd(16)}mean ${one(gpu.utilizationMean)} %, p95 ${gpu.utilizationP95} %${memory}, ${gpu.samples} samples${gpu.verdict ? `: ${gpu.verdict}` : ''}`,
      );
      if (gpu.explanation) lines.push(`                  ${gpu.explanation}`);
    }
  }
  const steps = summary.steps;
  if (steps) {
    const pace = steps.stepsPerSecond !== undefined ? `, ${steps.stepsPerSecond.toFixed(2)} steps/s` : '';
    lines.push(`  steps           ${steps.done} done, the last one numbered ${steps.lastStep} (${steps.lines} lines)${pace}`);
    for (const range of steps.ranges) {
      const utilization = range.utilizationMean !== undefined ? `, GPU ${one(range.utilizationMean)} %` : '';
      const verdicts = range.verdicts.length > 0 ? `: ${[...new Set(range.verdicts)].join(', ')}` : '';
      lines.push(
        `    ${range.name.padEnd(6)}        steps ${range.fromDone}-${range.toDone} done, ${range.stepsPerSecond.toFixed(2)} steps/s over ${formatDuration(range.seconds)}${utilization}${verdicts}`,
      );
    }
    if (steps.finding) lines.push(`  ${steps.finding.kind === 'stall' ? 'stall' : 'slow-down'}       ${steps.finding.text}`);
  }
  for (const note of summary.notes) lines.push(`  note: ${note}`);
  if (summary.nextSteps.length > 0) lines.push('  next steps:', ...summary.nextSteps.map((step) => `  - ${step}`));
  return `${lines.join('\n')}\n`;
}

const round = (value: number | undefined, digits: number) =>
  value === undefined ? undefined : Math.round(value * 10 ** digits) / 10 ** digits;

/** --summary-json: snake_case keys, each named here (as pulse's and report's JSON), numbers rounded for people. */
export function summaryJson(summary: RunSummary): object {
  return {
    task: summary.task,
    command: summary.command,
    started_at: new Date(summary.startedAt).toISOString(),
    duration_seconds: round(summary.durationSeconds, 3),
    exit_status: summary.exit.status,
    exit_code: summary.exit.code,
    signal: summary.exit.signal,
    selection: summary.selection,
    no_gpu_data: summary.noGpuData,
    gpu_hours: round(summary.gpuHours, 6),
    utilization_mean: round(summary.utilizationMean, 2),
    utilization_p95: summary.utilizationP95,
    idle_share: round(summary.idleShare, 4),
    energy_wh: round(summary.energyWh, 4),
    energy_from: summary.energyFrom,
    energy_estimated_gpu_seconds: round(summary.energyEstimatedSeconds, 1),
    gpus: summary.gpus.map((gpu) => ({
      gpu: gpu.gpu,
      uuid: gpu.uuid,
      name: gpu.name,
      samples: gpu.samples,
      utilization_mean: round(gpu.utilizationMean, 2),
      utilization_p95: gpu.utilizationP95,
      idle_share: round(gpu.idleShare, 4),
      peak_memory_mib: round(gpu.peakMemoryMiB, 1),
      energy_wh: round(gpu.energyWh, 4),
      energy_from: gpu.energyFrom,
      verdict: gpu.verdict,
      explanation: gpu.explanation,
    })),
    steps: summary.steps && {
      lines: summary.steps.lines,
      done: summary.steps.done,
      last_step: summary.steps.lastStep,
      steps_per_second: round(summary.steps.stepsPerSecond, 4),
      ranges: summary.steps.ranges.map((range) => ({
        name: range.name,
        from_done: range.fromDone,
        to_done: range.toDone,
        seconds: round(range.seconds, 3),
        steps_per_second: round(range.stepsPerSecond, 4),
        utilization_mean: round(range.utilizationMean, 2),
        verdicts: range.verdicts,
      })),
      finding: summary.steps.finding,
    },
    notes: summary.notes,
    next_steps: summary.nextSteps,
  };
}
