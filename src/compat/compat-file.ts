import { join } from 'node:path';
import { listIfAny, readTextIfAny, type Host } from '../host/host.js';
import { busIdKey } from '../xid/parse.js';

// Which peer exporters --compat names, the file each one's names go to, and the one fact of the host
// dcgm-exporter's labels need that no source gives: the GPU's device minor number.

/** The peer exporters whose names --compat writes. */
export const COMPAT_NAMES = ['dcgm'] as const;
export type CompatName = (typeof COMPAT_NAMES)[number];

/** "nvidia_gpu.prom" -> "nvidia_gpu_dcgm.prom": its own file, so no HELP text of ours meets one of the peer's (node_exporter#1885). */
export const compatFileName = (fileName: string, compat: CompatName): string => fileName.replace(/\.prom$/, `_${compat}.prom`);

/** "Device Minor: 	 3" in /proc/driver/nvidia/gpus/<bus>/information -> 3; undefined where the line is missing. */
export function parseDeviceMinor(information: string): number | undefined {
  const match = /^Device Minor:\s*(\d{1,6})\s*$/m.exec(information);
  return match ? Number(match[1]) : undefined;
}

/**
 * The GPUs' minor numbers (the N of /dev/nvidiaN, which is not always nvidia-smi's index), by PCI
 * bus id as busIdKey writes it; a GPU whose file does not say is left out, never guessed.
 */
export function readDeviceMinors(host: Host): Map<string, number> {
  const dir = join(host.proc, 'driver/nvidia/gpus');
  const minors = new Map<string, number>();
  for (const bus of listIfAny(dir)) {
    const minor = parseDeviceMinor(readTextIfAny(join(dir, bus, 'information')) ?? '');
    const key = busIdKey(bus);
    if (minor !== undefined && key !== undefined) minors.set(key, minor);
  }
  return minors;
}
