import { result, type Check } from '../types.js';

/**
 * nvidia-smi processes asleep in the driver (state D): what a GPU fallen off the bus does to every
 * caller. No signal ends them, and every new nvidia-smi joins them; collect starts none while the one
 * it left is there (nvidia_smi_stuck). Read from /proc/PID/stat and wchan (facts.stuckNvidiaSmi).
 */
export const stuckNvidiaSmi: Check = (facts) => {
  const stuck = facts.stuckNvidiaSmi;
  if (stuck.length === 0) return result('stuck_nvidia_smi', 'ok', 'no nvidia-smi asleep in the driver');
  return result(
    'stuck_nvidia_smi',
    'fail',
    `${stuck.length} nvidia-smi process(es) stuck in the driver (state D): no signal ends them; the GPU likely fell off the bus`,
    {
      evidence: stuck.map(
        (p) =>
          `pid ${p.pid}: state D${p.wchan ? `, waiting in ${p.wchan}` : ''}${p.ageSeconds === undefined ? '' : `, running for ${Math.round(p.ageSeconds / 60)} min`}`,
      ),
      fix: [
        'dmesg | grep -i xid   # Xid 79: the GPU fell off the bus',
        'reboot (or nvidia-smi -r to reset the GPU once nothing holds it); they end when the driver lets them go',
        'meanwhile gpu-textfile collect starts no other nvidia-smi and reports nvidia_smi_stuck',
      ],
    },
  );
};
