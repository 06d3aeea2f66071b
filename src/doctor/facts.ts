import { hostPath, exists, linkName, list, readIfExists, readWritable, type Host } from './host.js';
import type { SmiOutcome } from '../nvidia-smi/run.js';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** A display-class PCI device. */
export interface PciDevice {
  address: string;
  vendor: string;
  device: string;
  pciClass: string;
  /** Kernel driver bound to it, if any ("nvidia", "nouveau", "vfio-pci"). */
  driver?: string;
  /** power/runtime_status: "active", "suspended"… */
  runtimeStatus?: string;
  /** power_state: "D0", "D3cold"… */
  powerState?: string;
}

export interface DeviceNode {
  path: string;
  exists: boolean;
  readWritable: boolean;
}

/** Everything the checks look at, read once. */
export interface HostFacts {
  pci: PciDevice[];
  modules: Set<string>;
  kernelRelease?: string;
  /** nvidia.ko* found for the running kernel, and for other kernels. */
  moduleFilesForRunning: string[];
  moduleFilesForOthers: string[];
  /** Whether /lib/modules could be read at all (a container often has none). */
  libModulesVisible: boolean;
  nouveauBlacklisted: string[];
  deviceNodes: DeviceNode[];
  kernelModuleVersion?: string;
  nvmlLibraries: string[];
  container?: string;
  primeProfile?: string;
  smi?: { outcome: SmiOutcome; persistence: string[] };
  kernelLog?: string;
}

export const NVIDIA_VENDOR = '0x10de';
const DISPLAY_CLASS = /^0x03/;

/** /sys/bus/pci/devices/*: display-class devices, with their driver and power state. */
export async function readPci(host: Host): Promise<PciDevice[]> {
  const base = 'sys/bus/pci/devices';
  const devices = await Promise.all(
    (await list(host, base)).map(async (address): Promise<PciDevice | undefined> => {
      const read = (file: string) => readIfExists(host, `${base}/${address}/${file}`).then((text) => text?.trim());
      const [vendor, device, pciClass] = await Promise.all([read('vendor'), read('device'), read('class')]);
      if (!vendor || !pciClass || !DISPLAY_CLASS.test(pciClass)) return undefined;
      return {
        address,
        vendor,
        device: device ?? '',
        pciClass,
        driver: await linkName(host, `${base}/${address}/driver`),
        runtimeStatus: await read('power/runtime_status'),
        powerState: await read('power_state'),
      };
    }),
  );
  return devices.filter((d): d is PciDevice => d !== undefined).sort((a, b) => a.address.localeCompare(b.address));
}

/** /proc/modules -> loaded module names. */
export const parseModules = (text: string): Set<string> => new Set(text.split('\n').map((line) => line.split(' ')[0]!).filter(Boolean));

/** "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..." -> "580.159.04" */
export const parseDriverVersion = (text: string): string | undefined => /Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)/.exec(text)?.[1];

/** "blacklist nouveau" lines in /etc/modprobe.d and /lib/modprobe.d. */
async function readNouveauBlacklist(host: Host): Promise<string[]> {
  const found: string[] = [];
  for (const dir of ['etc/modprobe.d', 'lib/modprobe.d', 'usr/lib/modprobe.d']) {
    for (const file of await list(host, dir)) {
      const text = (await readIfExists(host, `${dir}/${file}`)) ?? '';
      if (/^\s*blacklist\s+nouveau\b/m.test(text)) found.push(`/${dir}/${file}`);
    }
  }
  return found;
}

/** nvidia.ko, nvidia.ko.xz, nvidia.ko.zst… anywhere under /lib/modules/<release>/ (DKMS: updates/dkms). */
async function findModuleFiles(host: Host, release: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > 6) return;
    const entries = await readdir(hostPath(host, dir), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (entry.isDirectory()) await walk(join(dir, entry.name), depth + 1);
      else if (/^nvidia\.ko(\.\w+)?$/.test(entry.name)) found.push(`/${join(dir, entry.name)}`);
    }
  };
  await walk(`lib/modules/${release}`, 0);
  return found;
}

const LIBRARY_DIRS = [
  'usr/lib/x86_64-linux-gnu',
  'usr/lib/aarch64-linux-gnu',
  'usr/lib64',
  'usr/lib',
  'lib/x86_64-linux-gnu',
  'lib64',
  'lib',
  'usr/local/nvidia/lib64',
  'usr/local/nvidia/lib',
  'usr/lib/wsl/lib',
];

/** libnvidia-ml.so.X.Y[.Z] files: the user-space side of the driver, with its version in the name. */
async function findNvml(host: Host): Promise<string[]> {
  const found = new Set<string>();
  for (const dir of LIBRARY_DIRS) {
    for (const file of await list(host, dir)) if (/^libnvidia-ml\.so\.\d+\.\d+/.test(file)) found.add(`/${dir}/${file}`);
  }
  return [...found].sort();
}

/** Docker, Podman, Kubernetes and friends leave marks; the name of the first one found. */
async function detectContainer(host: Host): Promise<string | undefined> {
  if (await exists(host, '.dockerenv')) return 'docker (/.dockerenv)';
  if (await exists(host, 'run/.containerenv')) return 'podman (/run/.containerenv)';
  const cgroup = (await readIfExists(host, 'proc/1/cgroup')) ?? '';
  const match = /(docker|kubepods|containerd|libpod|lxc)/.exec(cgroup);
  return match ? `${match[1]} (/proc/1/cgroup)` : undefined;
}

/** Everything but nvidia-smi: files only, cheap enough for collect to read when nvidia-smi fails. */
export async function readHostFacts(host: Host): Promise<HostFacts> {
  const [pci, modulesText, release, versionText, sysVersion, blacklist, nvml, container, prime, gpuDirs] = await Promise.all([
    readPci(host),
    readIfExists(host, 'proc/modules'),
    readIfExists(host, 'proc/sys/kernel/osrelease').then((t) => t?.trim()),
    readIfExists(host, 'proc/driver/nvidia/version'),
    readIfExists(host, 'sys/module/nvidia/version').then((t) => t?.trim()),
    readNouveauBlacklist(host),
    findNvml(host),
    detectContainer(host),
    readIfExists(host, 'etc/prime-discrete').then((t) => t?.trim()),
    list(host, 'proc/driver/nvidia/gpus'),
  ]);
  const modules = parseModules(modulesText ?? '');
  const kernelReleases = await list(host, 'lib/modules');
  const moduleFilesForRunning = release ? await findModuleFiles(host, release) : [];
  const moduleFilesForOthers = (await Promise.all(kernelReleases.filter((r) => r !== release).map((r) => findModuleFiles(host, r)))).flat();
  const gpuCount = Math.max(pci.filter((d) => d.vendor === NVIDIA_VENDOR).length, gpuDirs.length);
  const nodePaths = ['dev/nvidiactl', ...Array.from({ length: gpuCount }, (_, i) => `dev/nvidia${i}`), 'dev/nvidia-uvm'];
  const deviceNodes = await Promise.all(
    nodePaths.map(async (path) => ({ path: `/${path}`, exists: await exists(host, path), readWritable: await readWritable(host, path) })),
  );
  return {
    pci,
    modules,
    kernelRelease: release,
    moduleFilesForRunning,
    moduleFilesForOthers,
    libModulesVisible: kernelReleases.length > 0,
    nouveauBlacklisted: blacklist,
    deviceNodes,
    kernelModuleVersion: (versionText && parseDriverVersion(versionText)) ?? sysVersion,
    nvmlLibraries: nvml,
    container,
    primeProfile: prime,
  };
}
