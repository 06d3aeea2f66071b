import { NVIDIA_VENDOR } from '../facts.js';
import { result, type Check } from '../types.js';

/** A laptop's integrated GPU next to the NVIDIA one, with the NVIDIA one powered down or PRIME set to the integrated one. */
export const hybridGraphics: Check = (facts) => {
  const others = facts.pci.filter((d) => d.vendor !== NVIDIA_VENDOR);
  const nvidia = facts.pci.filter((d) => d.vendor === NVIDIA_VENDOR);
  if (others.length === 0 || nvidia.length === 0) return result('hybrid_graphics', 'skip', 'no integrated GPU next to the NVIDIA one');
  const down = nvidia.filter((d) => d.powerState === 'D3cold' || d.runtimeStatus === 'suspended');
  const primeIntegrated = facts.primeProfile === 'off';
  const evidence = [
    ...others.map((d) => `integrated ${d.address} vendor ${d.vendor}`),
    ...nvidia.map((d) => `NVIDIA ${d.address}: runtime ${d.runtimeStatus ?? '?'}${d.powerState ? `, ${d.powerState}` : ''}`),
    ...(facts.primeProfile !== undefined ? [`/etc/prime-discrete: ${facts.primeProfile}`] : []),
  ];
  const smiFailed = facts.smi !== undefined && facts.smi.outcome.kind !== 'ok';
  if ((down.length > 0 || primeIntegrated) && smiFailed) {
    return result('hybrid_graphics', 'fail', 'hybrid graphics: the NVIDIA GPU is powered down or PRIME selects the integrated GPU', {
      evidence,
      fix: [
        'sudo prime-select nvidia   # or on-demand; then log out and in, or reboot',
        'or allow runtime power management to wake it: cat /sys/bus/pci/devices/<address>/power/control',
      ],
      verdict: 'hybrid_gpu_powered_down',
    });
  }
  if (down.length > 0 || primeIntegrated)
    return result('hybrid_graphics', 'warn', 'hybrid graphics: the NVIDIA GPU sleeps until something uses it', { evidence });
  return result('hybrid_graphics', 'ok', 'hybrid graphics, NVIDIA GPU powered', { evidence });
};
