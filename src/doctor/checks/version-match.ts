import { result, type Check } from '../types.js';

const libraryVersion = (path: string) => /libnvidia-ml\.so\.(\d+\.\d+(?:\.\d+)?)$/.exec(path)?.[1];

/** The kernel module's version against the user-space NVML library's (libnvidia-ml.so.X.Y.Z). */
export const versionMatch: Check = (facts) => {
  const kernel = facts.kernelModuleVersion;
  const libraries = facts.nvmlLibraries.map((path) => ({ path, version: libraryVersion(path) }));
  const evidence = [`kernel module: ${kernel ?? 'unknown (not loaded?)'}`, ...libraries.map((l) => `${l.path}: ${l.version}`)];
  const said = facts.smi?.outcome.kind === 'exit' && /Driver\/library version mismatch/i.test(facts.smi.outcome.output);
  if (libraries.length === 0) {
    return result('version_match', 'fail', 'no libnvidia-ml.so.<version> in the usual library directories', {
      evidence,
      fix: [
        "reinstall the driver's user-space part (e.g. sudo apt install --reinstall libnvidia-compute-<version>)",
        'in a container: run it with the NVIDIA runtime (nvidia-container-toolkit), which mounts the library',
      ],
      verdict: 'nvml_library_missing',
    });
  }
  const differing = kernel ? libraries.filter((l) => l.version && l.version !== kernel) : [];
  if (said || (kernel && differing.length === libraries.length)) {
    return result(
      'version_match',
      'fail',
      `kernel module ${kernel ?? '?'} and user-space library ${differing[0]?.version ?? libraries[0]?.version} differ`,
      {
        evidence: [...evidence, ...(said ? ['nvidia-smi: Driver/library version mismatch'] : [])],
        fix: [
          'sudo reboot   # the usual case: the driver was upgraded and the old module is still loaded',
          'or, with no GPU process running: sudo rmmod nvidia_uvm nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia',
        ],
        verdict: 'driver_library_mismatch',
      },
    );
  }
  if (!kernel) return result('version_match', 'skip', 'kernel module version unknown (module not loaded)', { evidence });
  return result('version_match', 'ok', `kernel module and library both ${kernel}`, { evidence });
};
