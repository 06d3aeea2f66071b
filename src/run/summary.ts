import { classifyPulse, type Pulse } from '../pulse/classify.js';
import { NEXT_STEPS, type PulseVerdict } from '../pulse/verdicts.js';
import { gpuEnergy, histogramPercentile, type RunTotals } from './accumulate.js';
import { summarizeSteps, type StepSummary } from './steps.js';

/** How the job ended: its exit status, or the signal that killed it (status 128 + its number). */
export interface JobExit {
  status: number;
  code?: number;
  signal?: string;
}

/** How the job's GPUs were chosen. */
export type Selection = 'CUDA_VISIBLE_DEVICES' | 'process tree' | 'all';

/** One GPU of the job over the run. */
export interface GpuSummary {
  gpu: string;
  uuid: string;
  name?: string;
  samples: number;
  utilizationMean: number;
  utilizationP95: number;
  idleShare: number;
  peakMemoryMiB?: number;
  energyWh?: number;
  /** Where energyWh comes from: the board's counter (NVML) or power x time. */
  energyFrom?: 'counter' | 'power';
  /** Seconds of the run counted by power x time, the counter's reading not covering them. */
  energyEstimatedSeconds?: number;
  verdict?: PulseVerdict;
  explanation?: string;
}

/** The summary printed at exit and written by --summary-json. */
export interface RunSummary {
  task: string;
  command: string[];
  startedAt: number;
  durationSeconds: number;
  exit: JobExit;
  selection: Selection;
  notes: string[];
  gpus: GpuSummary[];
  /** Why there are no GPU numbers (nvidia-smi missing, no GPU the job used); undefined when there are. */
  noGpuData?: string;
  gpuHours: number;
  utilizationMean?: number;
  utilizationP95?: number;
  idleShare?: number;
  energyWh?: number;
  energyFrom?: 'counter' | 'power' | 'mixed';
  /** GPU-seconds counted by power x time where the energy is the counters' (no reading covered them). */
  energyEstimatedSeconds?: number;
  steps?: StepSummary;
  nextSteps: string[];
}

/** What the summary is computed from, besides the totals. */
export interface SummaryInput {
  task: string;
  command: string[];
  startedAt: number;
  endedAt: number;
  exit: JobExit;
  selection: Selection;
  /** nvidia-smi indices of the job's GPUs. */
  gpus: readonly string[];
  notes: string[];
}

/** The totals of the job's GPUs -> the summary. Pure: the same totals give the same summary. */
export function summarize(totals: RunTotals, input: SummaryInput): RunSummary {
  const durationSeconds = (input.endedAt - input.startedAt) / 1000;
  const chosen = input.gpus.flatMap((gpu) => {
    const found = totals.gpus.get(gpu);
    return found && found.samples > 0 ? [found] : [];
  });
  const gpus: GpuSummary[] = chosen.map((totals) => {
    const series = totals.series.items();
    const pulse = series.length >= 5 ? classifyPulse(series) : undefined;
    const energy = gpuEnergy(totals, input);
    return {
      gpu: totals.gpu,
      uuid: totals.uuid,
      ...(totals.name !== undefined ? { name: totals.name } : {}),
      samples: totals.samples,
      utilizationMean: totals.utilizationSum / totals.samples,
      utilizationP95: histogramPercentile(totals.utilizationHistogram, 95)!,
      idleShare: totals.idleSamples / totals.samples,
      ...(totals.peakMemoryMiB !== undefined ? { peakMemoryMiB: totals.peakMemoryMiB } : {}),
      ...(energy ? { energyWh: energy.joules / 3600, energyFrom: energy.from, energyEstimatedSeconds: energy.estimatedSeconds } : {}),
      ...(pulse ? { verdict: pulse.verdict, explanation: explainOverRun(pulse, series.length, totals.samples) } : {}),
    };
  });
  const samples = chosen.reduce((n, gpu) => n + gpu.samples, 0);
  const histogram = new Array(101).fill(0).map((_, v) => chosen.reduce((n, gpu) => n + gpu.utilizationHistogram[v]!, 0));
  const energies = gpus.flatMap((gpu) => (gpu.energyWh === undefined ? [] : [gpu.energyWh]));
  const energyFroms = new Set(gpus.flatMap((gpu) => (gpu.energyFrom ? [gpu.energyFrom] : [])));
  const steps = summarizeSteps(
    totals.steps.items(),
    totals.stepLines,
    chosen.map((gpu) => gpu.series.items()),
    input.endedAt,
  );
  const verdicts = [
    ...new Set([
      ...(steps?.finding?.cause === 'data_starved' ? ['data_starved' as const] : []),
      ...gpus.flatMap((g) => (g.verdict ? [g.verdict] : [])),
    ]),
  ];
  return {
    task: input.task,
    command: input.command,
    startedAt: input.startedAt,
    durationSeconds,
    exit: input.exit,
    selection: input.selection,
    notes: input.notes,
    gpus,
    ...(gpus.length === 0 ? { noGpuData: noDataReason(totals, input) } : {}),
    gpuHours: (durationSeconds * gpus.length) / 3600,
    ...(samples > 0
      ? {
          utilizationMean: chosen.reduce((sum, gpu) => sum + gpu.utilizationSum, 0) / samples,
          utilizationP95: histogramPercentile(histogram, 95),
          idleShare: chosen.reduce((n, gpu) => n + gpu.idleSamples, 0) / samples,
        }
      : {}),
    ...(energies.length > 0
      ? {
          energyWh: energies.reduce((a, b) => a + b, 0),
          energyFrom: energyFroms.size === 1 ? [...energyFroms][0]! : 'mixed',
          ...(energyFroms.has('counter')
            ? {
                energyEstimatedSeconds: gpus.reduce(
                  (n, gpu) => n + (gpu.energyFrom === 'counter' ? (gpu.energyEstimatedSeconds ?? 0) : 0),
                  0,
                ),
              }
            : {}),
        }
      : {}),
    ...(steps ? { steps } : {}),
    nextSteps: [...new Set(verdicts.filter((v) => v !== 'saturated' || verdicts.length === 1).flatMap((v) => NEXT_STEPS[v]))],
  };
}

/**
 * Pulse's explanation as the run's summary prints it under the GPU's own line (mean, p95, idle over
 * every sample): one set of numbers. Where pulse's figures are over other samples (idle ones left out
 * at the start or end, or the series thinned on a long run), the line says which; where pulse read
 * every sample, its opening "utilization X % on average" is the line above's mean again, left out.
 */
export function explainOverRun(pulse: Pulse, read: number, samples: number): string {
  if (pulse.trimmed > 0)
    return `without the ${pulse.trimmed} idle samples at the start or end (${pulse.evidence.samples} of ${read}): ${pulse.explanation}`;
  if (read < samples) return `over ${read} of the ${samples} samples, kept evenly: ${pulse.explanation}`;
  return pulse.explanation.replace(/^utilization \d+(\.\d)? % on average, /, '');
}

/** Why a run has no GPU numbers, in one line. */
function noDataReason(totals: RunTotals, input: SummaryInput): string {
  if (totals.gpus.size === 0 && totals.failures.length > 0) return `no GPU data: ${totals.failures[0]}`;
  if (totals.gpus.size === 0) return 'no GPU data: no sample was taken before the job ended';
  if (input.gpus.length === 0) return `no GPU data: the job could use no GPU (${input.selection})`;
  return "no GPU data: no sample of the job's GPUs was taken before the job ended";
}
