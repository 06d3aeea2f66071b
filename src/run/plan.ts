import type { Writable } from 'node:stream';
import type { CollectPlan } from '../collect/plan.js';

/** Everything `gpu-textfile run` needs, checked and typed: commands/run.ts builds it from the options. */
export interface RunPlan {
  /** The job's argv. */
  command: string[];
  task: string;
  /** Sampling interval of the long-running reader. */
  intervalMs: number;
  mark: RegExp;
  csvDir?: string;
  summaryJson?: string;
  /** Where the job's textfile goes while it runs; undefined: no textfile. */
  textfileDir?: string;
  fileName: string;
  /** How the GPUs are read (source, nvidia-smi, deadline, fields, host): collect's own plan. */
  collect: CollectPlan;
  /** The job's environment (CUDA_VISIBLE_DEVICES is read from it). */
  env: NodeJS.ProcessEnv;
  startedAt: number;
}

/** Where `run` reports: the job's output passes through these, and our own lines go to stderr. */
export interface RunIo {
  stdout: Writable;
  stderr: Writable;
}
