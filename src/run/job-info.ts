import type { MetricFamily } from '../exposition/families.js';

/** Who is running on a GPU, while `run`'s job runs: the textfile carries it beside the GPU's series. */
export interface JobIdentity {
  task: string;
  pid: number;
  /** The command's name (argv[0]'s last part): the full command line may hold secrets. */
  command: string;
  startedAtSeconds: number;
}

/**
 * nvidia_gpu_job_info{task,pid,command,gpu,uuid} 1 for each GPU the job uses, and the job's start
 * time: a dashboard joins them on gpu/uuid to show who runs where, and since when.
 */
export function jobFamilies(job: JobIdentity, gpus: readonly { gpu: string; uuid: string }[]): MetricFamily[] {
  const own = [
    ['task', job.task],
    ['pid', String(job.pid)],
  ] as const;
  return [
    {
      name: 'nvidia_gpu_job_info',
      type: 'gauge',
      help: 'A job started by gpu-textfile run, on one of the GPUs it uses; the value is always 1.',
      samples: gpus.map((gpu) => ({ labels: [...own, ['command', job.command], ['gpu', gpu.gpu], ['uuid', gpu.uuid]], value: 1 })),
    },
    {
      name: 'nvidia_gpu_job_start_time_seconds',
      type: 'gauge',
      help: 'Unix time the job started by gpu-textfile run began, in seconds.',
      samples: [{ labels: own, value: job.startedAtSeconds }],
    },
  ];
}
