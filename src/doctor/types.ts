import type { HostFacts } from './facts.js';

/** The first root cause along the chain of checks. */
export const VERDICTS = [
  'healthy',
  // Before the rest: a container the runtime gave no GPU shows none of it, and `--gpus all` is the fix.
  'container_without_gpu',
  'no_gpu_on_pci',
  'nouveau_active',
  'kernel_module_missing_for_running_kernel',
  'module_not_loaded',
  'device_nodes_missing',
  'device_permission_denied',
  'driver_library_mismatch',
  'nvml_library_missing',
  'nvidia_smi_missing',
  'hybrid_gpu_powered_down',
  'gpu_lost',
  'nvidia_smi_failed',
] as const;

export type Verdict = (typeof VERDICTS)[number];

/** `unfinished`: a fact the check needs was still being read when doctor's deadline passed. */
export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip' | 'unfinished';

export interface CheckResult {
  id: string;
  status: CheckStatus;
  summary: string;
  evidence: string[];
  /** Commands and steps that fix it; every failing check has some. */
  fix: string[];
  /** The root cause this check establishes when it fails. */
  verdict?: Exclude<Verdict, 'healthy'>;
}

/** A check: facts in, result out. Pure. */
export type Check = (facts: HostFacts) => CheckResult;

export const result = (id: string, status: CheckStatus, summary: string, more: Partial<CheckResult> = {}): CheckResult => ({
  id,
  status,
  summary,
  evidence: more.evidence ?? [],
  fix: more.fix ?? [],
  ...(more.verdict ? { verdict: more.verdict } : {}),
});
