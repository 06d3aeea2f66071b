import { hourlyPoints, type SeriesStats } from './aggregate.js';
import { FINDING_THRESHOLDS, type Finding } from './findings.js';

/** GPUs of one host and task with very different utilization: one works, the others wait. */
export function imbalance(group: readonly SeriesStats[], t = FINDING_THRESHOLDS): Finding | undefined {
  const averages = group
    .map((stats) => {
      const points = hourlyPoints(stats).filter((p) => p.utilization !== undefined);
      const weight = points.reduce((a, p) => a + p.samples, 0);
      return {
        stats,
        hours: points.length,
        avg: weight ? points.reduce((a, p) => a + p.utilization! * p.samples, 0) / weight : Number.NaN,
      };
    })
    .filter((g) => g.hours >= 1 && !Number.isNaN(g.avg));
  if (averages.length < 2) return undefined;
  const busiest = averages.reduce((a, b) => (b.avg > a.avg ? b : a));
  const idlest = averages.reduce((a, b) => (b.avg < a.avg ? b : a));
  const spread = busiest.avg - idlest.avg;
  if (spread < t.imbalanceMinSpread || busiest.avg < t.imbalanceMinBusiest) return undefined;
  return {
    kind: 'imbalance',
    host: busiest.stats.host,
    task_id: busiest.stats.task,
    gpu_id: '',
    gpu_uuid: '',
    summary: `GPU utilization differs by ${Math.round(spread)} points: GPU ${busiest.stats.gpu} averages ${Math.round(busiest.avg)} %, GPU ${idlest.stats.gpu} ${Math.round(idlest.avg)} %`,
    spread_points: Math.round(spread * 10) / 10,
    avg_utilization_percent_by_gpu: Object.fromEntries(averages.map((g) => [g.stats.gpu, Math.round(g.avg * 10) / 10])),
  };
}
