import { hourlyPoints, HOUR, type SeriesStats } from './aggregate.js';
import { FINDING_THRESHOLDS, type Finding } from './findings.js';

/** A GPU at ~0 % for hours while memory stays allocated on it: a job holding a GPU it does not use. */
export function idleGpu(stats: SeriesStats, t = FINDING_THRESHOLDS): Finding | undefined {
  const points = hourlyPoints(stats);
  let best: { from: number; to: number; hours: number; util: number[]; mem: number[] } | undefined;
  let run: typeof best;
  for (const p of points) {
    const idle = p.utilization !== undefined && p.utilization < t.idleMaxUtilization && (p.memoryMiB ?? 0) >= t.idleMinMemoryMib;
    const continues = run && p.hour - run.to === HOUR;
    if (idle && continues) {
      run!.to = p.hour;
      run!.hours++;
      run!.util.push(p.utilization!);
      run!.mem.push(p.memoryMiB!);
    } else if (idle) run = { from: p.hour, to: p.hour, hours: 1, util: [p.utilization!], mem: [p.memoryMiB!] };
    else run = undefined;
    if (run && (!best || run.hours > best.hours)) best = { ...run, util: [...run.util], mem: [...run.mem] };
  }
  if (!best || best.hours < t.idleMinHours) return undefined;
  const util = best.util.reduce((a, b) => a + b, 0) / best.util.length;
  const memory = Math.min(...best.mem);
  // The summary's idle+mem hours, per sample, of this GPU: a gap splits the run but not the total,
  // and a finding that said 115 h beside a summary of 165 h read as a contradiction.
  const inAll = [...stats.hourly.values()].reduce((sum, b) => sum + (b.samples > 0 ? b.idleHeld / b.samples : 0), 0);
  return {
    kind: 'idle',
    host: stats.host,
    task_id: stats.task,
    gpu_id: stats.gpu,
    gpu_uuid: stats.uuid,
    summary: `idle for ${best.hours} h in a row (${Math.round(inAll)} h in all; ${util.toFixed(1)} % utilization) while holding at least ${Math.round(memory)} MiB`,
    hours: best.hours,
    hours_in_all: Math.round(inAll * 100) / 100,
    from: new Date(best.from).toISOString(),
    to: new Date(best.to + HOUR).toISOString(),
    avg_utilization_percent: Math.round(util * 100) / 100,
    min_memory_used_mib: memory,
  };
}

/**
 * A GPU that works a little for days while holding memory: busy a few percent (over the idle
 * threshold, so no `idle` finding) for at least a day of hours in all, and for most of the hours it
 * held that memory (a serving GPU's quiet nights add up to days over a week, between busy days). A job waiting on data, the CPU
 * or a peer, or one too small for its GPU: what a fleet owner asks of a GPU that is never free.
 */
export function lowUseGpu(stats: SeriesStats, t = FINDING_THRESHOLDS): Finding | undefined {
  const holding = hourlyPoints(stats).filter((p) => p.utilization !== undefined && (p.memoryMiB ?? 0) >= t.idleMinMemoryMib);
  const low = holding.filter((p) => p.utilization! >= t.idleMaxUtilization && p.utilization! < t.lowUseMaxUtilization);
  if (low.length < t.lowUseMinHours || low.length < t.lowUseMinShare * holding.length) return undefined;
  const weight = low.reduce((sum, p) => sum + p.samples, 0);
  const util = low.reduce((sum, p) => sum + p.utilization! * p.samples, 0) / weight;
  const memory = Math.min(...low.map((p) => p.memoryMiB!));
  return {
    kind: 'low_use',
    host: stats.host,
    task_id: stats.task,
    gpu_id: stats.gpu,
    gpu_uuid: stats.uuid,
    summary: `${util.toFixed(1)} % busy for ${low.length} h in all while holding at least ${Math.round(memory)} MiB: waiting on data, the CPU or a peer, or a job too small for this GPU?`,
    hours: low.length,
    avg_utilization_percent: Math.round(util * 100) / 100,
    min_memory_used_mib: memory,
  };
}
