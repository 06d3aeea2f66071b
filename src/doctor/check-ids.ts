/**
 * The checks `doctor --only` can name, in the order they run (the ids the checks report, with - for _:
 * the check `kernel-module` is src/doctor/checks/kernel-module.ts). Kept apart from the checks so the
 * option table can list them without loading them; a test holds it equal to what the checks report.
 */
export const DOCTOR_CHECKS = [
  'container',
  'pci-device',
  'kernel-module',
  'module-for-kernel',
  'nouveau',
  'device-nodes',
  'version-match',
  'hybrid-graphics',
  'persistence-mode',
  'stuck-nvidia-smi',
  'environ',
  'nvidia-smi',
  'kernel-log',
] as const;
