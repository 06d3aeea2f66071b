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
  return {
    kind: 'idle',
    host: stats.host,
    task_id: stats.task,
    gpu_id: stats.gpu,
    gpu_uuid: stats.uuid,
    summary: `idle for ${best.hours} h (${util.toFixed(1)} % utilization) while holding at least ${Math.round(memory)} MiB`,
    hours: best.hours,
    from: new Date(best.from).toISOString(),
    to: new Date(best.to + HOUR).toISOString(),
    avg_utilization_percent: Math.round(util * 100) / 100,
    min_memory_used_mib: memory,
  };
}
