import { hostname } from 'node:os';
import { compatOutputs, isDcgm, readDeviceMinors, type CompatName } from '../compat/compat-file.js';
import type { DcgmContext } from '../compat/dcgm.js';
import type { PublishTarget } from '../publish/publish.js';
import type { CollectPlan } from './plan.js';

// The files a collect run owns, described once: the main thread publishes its samples there, and
// the NVML watchdog's thread, which gets this description whole (values only: it crosses threads),
// publishes a hung call's failure to the very same files, ours and each --compat peer's.

/** Where a run publishes, as plain values. */
export interface TargetPlan {
  textfileDir: string;
  fileName: string;
  dryRun: boolean;
  labels: [string, string][];
  /** --compat: the peers and what their labels need; absent for none. */
  compat?: { names: readonly CompatName[]; context: DcgmContext };
}

/** The files `plan` owns; the device minors are read here (dcgm-exporter's labels need them). */
export const targetPlanOf = (plan: CollectPlan): TargetPlan => ({
  textfileDir: plan.textfileDir,
  fileName: plan.fileName,
  dryRun: plan.dryRun,
  labels: plan.labels,
  compat:
    plan.compat === undefined || plan.compat.length === 0
      ? undefined
      : {
          names: plan.compat,
          context: {
            hostname: hostname(),
            labels: plan.labels,
            processes: plan.processes,
            minors: plan.compat.some(isDcgm) ? readDeviceMinors(plan.host) : undefined,
          },
        },
});

/** The target `publish` writes to, from its description; `out` is where --dry-run prints. */
export const publishTargetFrom = (target: TargetPlan, out: PublishTarget['out']): PublishTarget => ({
  textfileDir: target.textfileDir,
  fileName: target.fileName,
  dryRun: target.dryRun,
  labels: target.labels,
  compat: target.compat && compatOutputs(target.compat.names, target.fileName, target.compat.context),
  out,
});
