import { processFile, SYSTEM_HOST } from '../../host/host.js';
import { result, type Check } from '../types.js';

const PID1_ENVIRON = processFile(SYSTEM_HOST, 1, 'environ');

/** How to let the packaged units read jobs' environments: the one capability the kernel asks for. */
const FIX = [
  'systemctl edit gpu-textfile.service (and gpu-textfile-daemon.service): [Service] CapabilityBoundingSet=CAP_SYS_PTRACE',
  "the units run as root with no capability; reading another process's environ takes CAP_SYS_PTRACE (ptrace's read check), which also lets the service read those processes' memory: a site's choice, not the default",
  'in a container: --pid=host --cap-add SYS_PTRACE, and no ProtectProc=invisible or hidepid= on the /proc it reads',
];

/**
 * Whether the jobs' reserved GPUs can be read here (docs/jobs.md, "Reserved"): a job's GPUs come
 * from its processes' environ files, which the kernel lets only a reader with CAP_SYS_PTRACE (or
 * the process's own user) open. A warning: the holders are read all the same.
 */
export const environ: Check = (facts) => {
  const { jobs, unknown, pid1 } = facts.environ;
  if (unknown > 0)
    return result('environ', 'warn', `the reserved GPUs of ${unknown} of ${jobs} job(s) cannot be read: their environ does not open here`, {
      evidence: [`${unknown} Slurm job, pod or container cgroup(s) with no readable environ`, `${PID1_ENVIRON}: ${pid1}`],
      fix: FIX,
    });
  if (pid1 === 'denied')
    return result('environ', 'warn', "another process's environ does not open here: jobs' reserved GPUs would be unknown", {
      evidence: [`${PID1_ENVIRON}: permission denied`],
      fix: FIX,
    });
  return result('environ', 'ok', jobs > 0 ? `the reserved GPUs of ${jobs} job(s) read` : 'no job cgroup on the host; environs open here');
};
