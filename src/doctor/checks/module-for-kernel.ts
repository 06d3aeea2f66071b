import { result, type Check } from '../types.js';

/** A module built for the running kernel under /lib/modules/<release>/: after a kernel upgrade without the driver, there is none. */
export const moduleForKernel: Check = (facts) => {
  const release = facts.kernelRelease ?? 'unknown';
  if (facts.modules.has('nvidia')) return result('module_for_kernel', 'ok', `the nvidia module is loaded into kernel ${release}`);
  if (!facts.libModulesVisible) return result('module_for_kernel', 'skip', '/lib/modules cannot be read here (a container?)');
  const evidence = [
    `running kernel: ${release}`,
    ...(facts.moduleFilesForRunning.length
      ? facts.moduleFilesForRunning.map((f) => `found ${f}`)
      : [`no nvidia.ko under /lib/modules/${release}/`]),
    ...facts.moduleFilesForOthers.map((f) => `built for another kernel: ${f}`),
  ];
  if (facts.moduleFilesForRunning.length > 0)
    return result('module_for_kernel', 'ok', `an nvidia module exists for kernel ${release}`, { evidence });
  return result(
    'module_for_kernel',
    'fail',
    `no nvidia module for the running kernel ${release}${facts.moduleFilesForOthers.length ? ' (only for other kernels: the kernel was upgraded without the driver)' : ''}`,
    {
      evidence,
      fix: [
        `sudo dkms autoinstall -k ${release}   # DKMS driver: build it for this kernel`,
        `sudo apt install linux-modules-nvidia-<version>-$(uname -r)   # Ubuntu's prebuilt modules, or reinstall the driver package`,
        'or boot the previous kernel from the boot menu',
      ],
      verdict: 'kernel_module_missing_for_running_kernel',
    },
  );
};
