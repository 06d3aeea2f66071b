import { result, type Check } from '../types.js';

const MODULES = ['nvidia', 'nvidia_uvm', 'nvidia_modeset', 'nvidia_drm'];

/** The nvidia kernel module (and its companions) in /proc/modules. */
export const kernelModule: Check = (facts) => {
  const loaded = MODULES.filter((m) => facts.modules.has(m));
  const evidence = [`loaded: ${loaded.join(', ') || `none of ${MODULES.join(', ')}`}`];
  if (!facts.modules.has('nvidia')) {
    return result('kernel_module', 'fail', 'the nvidia kernel module is not loaded', {
      evidence,
      fix: ['sudo modprobe nvidia', 'if that fails: sudo dmesg | grep -i -e nvrm -e nvidia   (the reason is there)'],
      verdict: 'module_not_loaded',
    });
  }
  if (!facts.modules.has('nvidia_uvm')) {
    return result('kernel_module', 'warn', 'nvidia is loaded, nvidia_uvm is not (CUDA programs need it)', {
      evidence,
      fix: ['sudo modprobe nvidia_uvm   # or run nvidia-modprobe -u -c=0'],
    });
  }
  return result('kernel_module', 'ok', 'nvidia kernel module loaded', { evidence });
};
