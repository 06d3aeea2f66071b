import type { FailureReason } from '../../collection.js';
import { classifyFailure } from '../../sources/nvidia-smi/failure.js';
import { result, type Check, type Verdict } from '../types.js';

const VERDICT_FOR: Partial<Record<FailureReason, Exclude<Verdict, 'healthy'>>> = {
  gpu_lost: 'gpu_lost',
  driver_library_mismatch: 'driver_library_mismatch',
  nvml_library_missing: 'nvml_library_missing',
  gpu_access_blocked: 'device_permission_denied',
  insufficient_permissions: 'device_permission_denied',
  nvidia_smi_not_found: 'nvidia_smi_missing',
};

const FIX_FOR: Partial<Record<FailureReason, string[]>> = {
  nvidia_smi_not_found: [
    "install the driver's utilities (Debian/Ubuntu: nvidia-utils-<version>), or put their directory on PATH (containers: /usr/local/nvidia/bin)",
  ],
  gpu_lost: [
    'sudo nvidia-smi -r -i <bus id>   # reset the GPU once no process uses it',
    'otherwise reboot; if it recurs, check power, cooling and seating (Xid 79 in the kernel log)',
  ],
  gpu_access_blocked: ['check /dev/nvidiactl and /dev/nvidia* exist and are crw-rw-rw- (or this user is in their group)'],
};

/**
 * nvidia-smi's answer, classified the way collect classifies it. The check runs nothing (checks are
 * pure): commands/doctor.ts ran nvidia-smi once, before the checks, and facts.smi holds its outcome.
 * A failure it cannot name is nvidia_smi_failed, last in VERDICTS: any cause another check names wins.
 */
export const nvidiaSmi: Check = (facts) => {
  const smi = facts.smi;
  if (!smi) return result('nvidia_smi', 'skip', 'not run');
  if (smi.outcome.kind === 'ok')
    return result('nvidia_smi', 'ok', 'nvidia-smi answers', { evidence: smi.outcome.stdout.trim().split('\n').slice(0, 16) });
  const failure = classifyFailure(smi.outcome, 'nvidia-smi');
  // The message is the summary's: said once, not again as its evidence.
  return result('nvidia_smi', 'fail', `${failure.reason}: ${failure.message}`, {
    fix: FIX_FOR[failure.reason] ?? [
      "the checks above found no cause; the message above is nvidia-smi's own: search it with the driver version, or run sudo nvidia-bug-report.sh",
    ],
    verdict: VERDICT_FOR[failure.reason] ?? 'nvidia_smi_failed',
  });
};
