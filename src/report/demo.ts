// report --demo: a generated week of one 4-GPU host's CSV trail, with a finding of every kind planted
// in it, and the jobs that held its GPUs, so the report (its --by job and HTML page too) can be seen
// before any history exists. The generator is
// the one the report's thresholds are tuned and tested on.
import { writeHistory } from './history-generator.js';

const HOUR = 3_600_000;

/** Writes the demo trail under `dir` (archives per day, the last day live); returns the number of rows. */
export function writeDemoHistory(dir: string, now: number): number {
  const days = 7;
  // The week that ends at the start of today (UTC): recent enough for --since 7d.
  const start = Math.floor(now / (24 * HOUR)) * 24 * HOUR - days * 24 * HOUR;
  return writeHistory(dir, {
    days,
    start,
    host: 'demo-node',
    task: 'demo',
    // A steady trainer, a leak, a GPU idle while holding memory, and one starved beside the trainer.
    gpus: ['training', 'leak', 'idleWithMemory', 'waiting'],
    // A 3-hour hole in the whole host's trail on day 3, and a GPU lost for 10 minutes on day 5.
    skip: (_gpu: number, h: number) => h >= 50 && h < 53,
    fail: (gpu: number, h: number) => (gpu === 3 && h >= 100 && h < 100 + 1 / 6 ? 'gpu_lost' : undefined),
    jobs: demoJobs,
  });
}

/**
 * Who holds each GPU, so that `--by job`, the held_idle finding and the HTML page's jobs table show
 * without a GPU: alice's Slurm job trains on GPU 0 (its evaluation dips included), bob's inference
 * container leaks on GPU 1, carol's interactive Slurm job holds GPU 2 idle all week, and a Triton unit
 * waits on GPU 3. Each job holds a little less than its GPU has in use (the driver's own share).
 */
function demoJobs(gpu: number, _h: number, load: { util: number; memory: number }): string {
  const who = ['slurm:4242:alice', 'container:3f4e9c1d2b7a:bob', 'slurm:4377:carol', 'unit:triton.service:triton'][gpu];
  return who === undefined ? '-' : `${who}:${Math.max(0, load.memory - 512)}:${load.util}`;
}
