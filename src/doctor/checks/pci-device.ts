import { NVIDIA_VENDOR } from '../facts.js';
import { result, type Check } from '../types.js';

/** NVIDIA display devices on the PCI bus (/sys/bus/pci/devices/*), their driver and power state. */
export const pciDevice: Check = (facts) => {
  const nvidia = facts.pci.filter((d) => d.vendor === NVIDIA_VENDOR);
  const evidence = nvidia.map(
    (d) =>
      `${d.address} device ${d.device} class ${d.pciClass}: driver ${d.driver ?? 'none'}, runtime ${d.runtimeStatus ?? '?'}${d.powerState ? `, ${d.powerState}` : ''}`,
  );
  if (nvidia.length === 0) {
    return result('pci_device', 'fail', 'no NVIDIA display device on the PCI bus', {
      evidence: facts.pci.map((d) => `${d.address} vendor ${d.vendor} class ${d.pciClass}`),
      // In a container the card is the host's business: what to check there is the container check's.
      fix: facts.container
        ? [`run lspci -d 10de: on the host: if it lists the GPU, this container (${facts.container}) was started without it`]
        : [
            'check the card is seated and powered (external power cables), and enabled in the firmware setup',
            'in a VM: pass the GPU through to it (vfio-pci on the host)',
          ],
      verdict: 'no_gpu_on_pci',
    });
  }
  const unbound = nvidia.filter((d) => !d.driver);
  if (unbound.length > 0)
    return result('pci_device', 'warn', `${nvidia.length} NVIDIA device(s), ${unbound.length} bound to no driver`, { evidence });
  return result('pci_device', 'ok', `${nvidia.length} NVIDIA device(s) on the PCI bus`, { evidence });
};
