import type { SeriesStats } from './aggregate.js';
import type { Finding } from './findings.js';

/** Failed samples by reason (the CSV's status). */
export function errorSamples(stats: SeriesStats): Finding | undefined {
  const total = [...stats.errorsByReason.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return undefined;
  const byReason = Object.fromEntries([...stats.errorsByReason.entries()].sort((a, b) => b[1] - a[1]));
  return {
    kind: 'errors',
    host: stats.host,
    task_id: stats.task,
    gpu_id: stats.gpu,
    gpu_uuid: stats.uuid,
    summary: `${total} failed samples: ${Object.entries(byReason)
      .map(([reason, n]) => `${reason} ${n}`)
      .join(', ')}`,
    error_samples: total,
    by_reason: byReason,
  };
}
