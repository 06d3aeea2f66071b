import { join } from 'node:path';
import type { Collection } from '../collection.js';
import type { MetricFamily } from '../exposition/families.js';
import { listIfAny, readTextIfAny, type Host } from '../host/host.js';
import { busIdKey } from '../xid/parse.js';
import { dcgmFamilies, dcgmLabelNames, type DcgmContext } from './dcgm.js';
import { DCGM_PROFILES } from './dcgm-fields.js';
import { NVIDIA_GPU_EXPORTER_LABELS, nvidiaGpuExporterFamilies } from './nvidia-gpu-exporter.js';

// Which peer exporters --compat names, the file each one's names go to, and the one fact of the host
// dcgm-exporter's labels need that no source gives: the GPU's device minor number.

/** The peer exporters whose names --compat writes; dcgm-exporter's once per generation of its names (src/compat/dcgm-fields.ts). */
export const COMPAT_NAMES = ['dcgm', 'dcgm-4.8.3', 'dcgm-4.9', 'dcgm-4.10', 'nvidia_gpu_exporter'] as const;
export type CompatName = (typeof COMPAT_NAMES)[number];
type DcgmName = Exclude<CompatName, 'nvidia_gpu_exporter'>;

/** Whether --compat NAME writes dcgm-exporter's names (one of its generations). */
export const isDcgm = (name: CompatName): name is DcgmName => name !== 'nvidia_gpu_exporter';

/**
 * --compat's value: one name or a list ("dcgm,nvidia_gpu_exporter"), each once; or the one line that
 * says what is wrong (exit 2). Commas or white space separate, as in every list of
 * /etc/default/gpu-textfile, and an empty value (a setting blanked out there) asks for none. A --label
 * that the peer's series carry already is refused too: the series would have that label twice, which
 * node_exporter rejects.
 */
export function parseCompat(value: string | undefined, labels: readonly (readonly [string, string])[]): CompatName[] | string {
  if (value === undefined) return [];
  const names: CompatName[] = [];
  for (const item of value.split(/[\s,]+/).filter((part) => part !== '')) {
    const name = COMPAT_NAMES.find((known) => known === item);
    if (!name) return `--compat: "${item}" is not one of ${COMPAT_NAMES.join(', ')}`;
    if (!names.includes(name)) names.push(name);
  }
  // The two write the same series but for the PCIe rates: node_exporter would refuse the second file.
  if (names.includes('dcgm-4.9') && names.includes('dcgm-4.10'))
    return '--compat: dcgm-4.9 and dcgm-4.10 write the same series (only the PCIe rates are named apart); choose one';
  for (const name of names) {
    const taken = labels.find(([key]) => peerLabels(name).includes(key));
    if (taken) return `--label: "${taken[0]}" is a label of --compat ${name}'s series`;
  }
  return names;
}

const peerLabels = (name: CompatName): readonly string[] =>
  isDcgm(name) ? dcgmLabelNames(DCGM_PROFILES[name]) : NVIDIA_GPU_EXPORTER_LABELS;

/** One peer's file: its name, and the collection in the peer's names. */
export interface CompatOutput {
  fileName: string;
  families: (collection: Collection) => MetricFamily[];
}

/** The files --compat asks for, each rendered from the same collection as ours. */
export const compatOutputs = (names: readonly CompatName[], fileName: string, context: DcgmContext): CompatOutput[] =>
  names.map((name) => ({
    fileName: compatFileName(fileName, name),
    families: isDcgm(name)
      ? (collection: Collection) => dcgmFamilies(collection, context, DCGM_PROFILES[name])
      : (collection: Collection) => nvidiaGpuExporterFamilies(collection, context.labels, context.processes ?? false),
  }));

/** "nvidia_gpu.prom" -> "nvidia_gpu_dcgm.prom" ("nvidia_gpu_dcgm-4.9.prom"): its own file, so no HELP text of ours meets one of the peer's (node_exporter#1885). */
export const compatFileName = (fileName: string, compat: CompatName): string => fileName.replace(/\.prom$/, `_${compat}.prom`);

/**
 * The peers' files of `fileName` that --compat does not ask for (any more): collect removes them when
 * it starts, since the peers' names carry no time of collection and a file left by an earlier
 * --compat would show its last values for ever.
 */
export const unaskedCompatFiles = (names: readonly CompatName[], fileName: string): string[] =>
  COMPAT_NAMES.filter((name) => !names.includes(name)).map((name) => compatFileName(fileName, name));

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
