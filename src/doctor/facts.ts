import { environAccess, readReservations } from '../host/reservations.js';
import { exists, linkName, list, listEntries, readIfExists, readWritable, SYSTEM_HOST, type Host } from '../host/host.js';
import type { SmiOutcome } from '../sources/nvidia-smi/run.js';
import { parseProcessStat } from '../host/process-stat.js';
import { beforeDeadline, LATE } from './deadline.js';
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
  /** nvidia-smi processes asleep in the driver (state D), whoever started them. */
  stuckNvidiaSmi: SleepingProcess[];
  smi?: { outcome: SmiOutcome; persistence: string[] };
  kernelLog?: string;
  /** The job cgroups found, of them those whose reserved GPUs could not be read, and whether /proc/1/environ opens here. */
  environ: { jobs: number; unknown: number; pid1: 'readable' | 'denied' | 'absent' };
}

export const NVIDIA_VENDOR = '0x10de';

/** A process asleep in the kernel (state D): no signal, not even SIGKILL, ends it until the call returns. */
export interface SleepingProcess {
  pid: number;
  /** /proc/PID/wchan: the kernel function it waits in, where the kernel says. */
  wchan?: string;
  /** How long it has run, in seconds (its start against /proc/uptime); absent where either is unreadable. */
  ageSeconds?: number;
}

/** Clock ticks per second in /proc/PID/stat's start time (USER_HZ: 100 on every Linux architecture in use). */
const USER_HZ = 100;

/** /proc/[0-9]+/stat (and wchan) of every process: the nvidia-smi ones in state D. */
async function readStuckNvidiaSmi(host: Host): Promise<SleepingProcess[]> {
  const uptime = Number((await readIfExists(host, 'proc/uptime'))?.split(' ')[0]);
  const pids = await list(host, 'proc', (name) => /^\d+$/.test(name));
  const found = await Promise.all(
    pids.map(async (pid): Promise<SleepingProcess | undefined> => {
      const stat = parseProcessStat((await readIfExists(host, `proc/${pid}/stat`)) ?? '');
      if (stat?.comm !== 'nvidia-smi' || stat.state !== 'D') return undefined;
      const wchan = (await readIfExists(host, `proc/${pid}/wchan`))?.trim();
      const age = uptime - Number(stat.startTicks) / USER_HZ;
      return {
        pid: Number(pid),
        wchan: wchan && wchan !== '0' ? wchan.slice(0, 64) : undefined,
        ageSeconds: Number.isFinite(age) && age >= 0 ? age : undefined,
      };
    }),
  );
  return found.filter((p): p is SleepingProcess => p !== undefined).sort((a, b) => a.pid - b.pid);
}
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
export const parseModules = (text: string): Set<string> =>
  new Set(
    text
      .split('\n')
      .map((line) => line.split(' ')[0]!)
      .filter(Boolean),
  );

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
async function findModuleFiles(host: Host, release: string, signal: AbortSignal): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    // Past the deadline no one waits for the answer: stop walking.
    if (depth > 6 || signal.aborted) return;
    const entries = await listEntries(host, dir);
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

const NVML_FILE = /^libnvidia-ml\.so\.\d+\.\d+/;

/** libnvidia-ml.so.X.Y[.Z] files: the user-space side of the driver, with its version in the name. */
async function findNvml(host: Host): Promise<string[]> {
  const found = new Set<string>();
  for (const dir of LIBRARY_DIRS) {
    for (const file of await list(host, dir, (name) => NVML_FILE.test(name))) found.add(`/${dir}/${file}`);
  }
  return [...found].sort();
}

/** Where a container manager following systemd's container interface names itself. */
const SYSTEMD_CONTAINER = 'run/systemd/container';

/** Docker, Podman, systemd-nspawn, Kubernetes and friends leave marks; the name of the first one found. */
async function detectContainer(host: Host): Promise<string | undefined> {
  if (await exists(host, '.dockerenv')) return 'docker (/.dockerenv)';
  if (await exists(host, 'run/.containerenv')) return 'podman (/run/.containerenv)';
  // systemd-nspawn (and LXC, and others following systemd's container interface) write their
  // manager's name here; systemd's own detect-virt reads it. A name that is no name is not shown.
  const manager = await readIfExists(host, SYSTEMD_CONTAINER);
  if (manager !== undefined) {
    const name = manager.split('\n', 1)[0]!;
    return `${/^[\w.-]{1,64}$/.test(name) ? name : 'a container'} (/${SYSTEMD_CONTAINER})`;
  }
  const cgroup = (await readIfExists(host, 'proc/1/cgroup')) ?? '';
  const match = /(docker|kubepods|containerd|libpod|lxc)/.exec(cgroup);
  return match ? `${match[1]} (${FACT_SOURCES.container})` : undefined;
}

/** The facts read from files, each gathered on its own so that one stuck read holds back only its checks. */
export type FileFact = Exclude<keyof HostFacts, 'smi' | 'kernelLog'>;

/** Where each fact comes from, for saying what was still being read at the deadline. */
export const FACT_SOURCES: Readonly<Record<FileFact | 'kernelLog', string>> = {
  pci: join(SYSTEM_HOST.sys, 'bus/pci/devices'),
  modules: join(SYSTEM_HOST.proc, 'modules'),
  kernelRelease: join(SYSTEM_HOST.proc, 'sys/kernel/osrelease'),
  moduleFilesForRunning: '/lib/modules',
  moduleFilesForOthers: '/lib/modules',
  libModulesVisible: '/lib/modules',
  nouveauBlacklisted: '/etc/modprobe.d',
  deviceNodes: join(SYSTEM_HOST.dev, 'nvidia*'),
  kernelModuleVersion: join(SYSTEM_HOST.proc, 'driver/nvidia/version'),
  nvmlLibraries: 'the libnvidia-ml.so directories',
  container: join(SYSTEM_HOST.proc, '1/cgroup'),
  primeProfile: '/etc/prime-discrete',
  stuckNvidiaSmi: join(SYSTEM_HOST.proc, '*/stat'),
  environ: join(SYSTEM_HOST.proc, '*/environ'),
  kernelLog: join(SYSTEM_HOST.dev, 'kmsg'),
};

/** What a fact is taken to be while unread: the checks that read it are then marked unfinished, not judged. */
const UNREAD: Pick<HostFacts, FileFact> = {
  pci: [],
  modules: new Set(),
  kernelRelease: undefined,
  moduleFilesForRunning: [],
  moduleFilesForOthers: [],
  libModulesVisible: false,
  nouveauBlacklisted: [],
  deviceNodes: [],
  kernelModuleVersion: undefined,
  nvmlLibraries: [],
  container: undefined,
  primeProfile: undefined,
  stuckNvidiaSmi: [],
  environ: { jobs: 0, unknown: 0, pid1: 'absent' },
};

/** Facts, and the names of those not read before the deadline. */
export interface GatheredFacts {
  facts: HostFacts;
  unfinished: string[];
}

/** Everything but nvidia-smi: files only, cheap enough for collect to read when nvidia-smi fails. */
export async function readHostFacts(host: Host, signal: AbortSignal): Promise<GatheredFacts> {
  const pci = readPci(host);
  const release = readIfExists(host, 'proc/sys/kernel/osrelease').then((t) => t?.trim());
  const kernelReleases = list(host, 'lib/modules');
  const gpuDirs = list(host, 'proc/driver/nvidia/gpus');
  const jobs: { [K in FileFact]: Promise<HostFacts[K]> } = {
    pci,
    modules: readIfExists(host, 'proc/modules').then((text) => parseModules(text ?? '')),
    kernelRelease: release,
    moduleFilesForRunning: release.then((r) => (r ? findModuleFiles(host, r, signal) : [])),
    moduleFilesForOthers: Promise.all([release, kernelReleases]).then(async ([r, all]) =>
      (await Promise.all(all.filter((other) => other !== r).map((other) => findModuleFiles(host, other, signal)))).flat(),
    ),
    libModulesVisible: kernelReleases.then((all) => all.length > 0),
    nouveauBlacklisted: readNouveauBlacklist(host),
    deviceNodes: Promise.all([pci, gpuDirs]).then(([devices, dirs]) =>
      readDeviceNodes(host, Math.max(devices.filter((d) => d.vendor === NVIDIA_VENDOR).length, dirs.length)),
    ),
    kernelModuleVersion: Promise.all([
      readIfExists(host, 'proc/driver/nvidia/version'),
      readIfExists(host, 'sys/module/nvidia/version'),
    ]).then(([versionText, sysVersion]) => (versionText && parseDriverVersion(versionText)) ?? sysVersion?.trim()),
    nvmlLibraries: findNvml(host),
    container: detectContainer(host),
    primeProfile: readIfExists(host, 'etc/prime-discrete').then((t) => t?.trim()),
    stuckNvidiaSmi: readStuckNvidiaSmi(host),
    environ: Promise.resolve().then(() => {
      const read = readReservations(host);
      return { jobs: read ? read.jobs.length + read.unknown : 0, unknown: read?.unknown ?? 0, pid1: environAccess(host) };
    }),
  };
  const facts: Record<string, unknown> = {};
  const unfinished: string[] = [];
  await Promise.all(
    (Object.keys(jobs) as FileFact[]).map(async (name) => {
      const value = await beforeDeadline<unknown>(jobs[name], signal);
      if (value === LATE) unfinished.push(name);
      facts[name] = value === LATE ? UNREAD[name] : value;
    }),
  );
  return { facts: facts as unknown as HostFacts, unfinished: unfinished.sort() };
}

/** /dev/nvidiactl, one /dev/nvidiaN per GPU, /dev/nvidia-uvm. */
async function readDeviceNodes(host: Host, gpuCount: number): Promise<DeviceNode[]> {
  const nodePaths = ['dev/nvidiactl', ...Array.from({ length: gpuCount }, (_, i) => `dev/nvidia${i}`), 'dev/nvidia-uvm'];
  return Promise.all(
    nodePaths.map(async (path) => ({ path: `/${path}`, exists: await exists(host, path), readWritable: await readWritable(host, path) })),
  );
}
