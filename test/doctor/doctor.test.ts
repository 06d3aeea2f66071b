import { cp, mkdir, rm, symlink, writeFile, chmod, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { DOCTOR_CHECKS } from '../../src/doctor/check-ids.js';
import { VERDICTS, type Verdict } from '../../src/doctor/types.js';
import { CLI, FAKE_BIN, FAKE_SMI, FIXTURES, capture, cliEnv, runCli, tempDir } from '../support/helpers.js';

const HEALTHY = join(FIXTURES, 'hosts/h200x2-healthy');
const GPUS = ['0000:00:06.0', '0000:00:07.0'];
const pci = (root: string, address: string) => join(root, 'sys/bus/pci/devices', address);

/** A copy of the healthy host's tree, to break one way. */
async function tree(): Promise<string> {
  const root = join(await tempDir(), 'root');
  await cp(HEALTHY, root, { recursive: true, verbatimSymlinks: true });
  return root;
}

const unloadNvidia = (root: string) => writeFile(join(root, 'proc/modules'), 'kvm 1 0 - Live 0x0\n');
const unbind = async (root: string) => {
  for (const gpu of GPUS) await rm(join(pci(root, gpu), 'driver'));
};
const withoutModuleVersion = async (root: string) => {
  await rm(join(root, 'proc/driver/nvidia'), { recursive: true });
  await rm(join(root, 'sys/module/nvidia'), { recursive: true });
};
const moduleFile = async (root: string, release: string) => {
  await mkdir(join(root, 'lib/modules', release, 'updates/dkms'), { recursive: true });
  await writeFile(join(root, 'lib/modules', release, 'updates/dkms/nvidia.ko.zst'), '');
};

interface Variant {
  verdict: Verdict;
  /** How the host breaks. */
  breakIt: (root: string) => Promise<void>;
  /** The nvidia-smi that goes with it: a recorded failure replayed, or a misbehaving stand-in. */
  smi: { path?: string; capture?: string };
  /** Run as an unprivileged user (permissions mean nothing to root). */
  unprivileged?: boolean;
}

const VARIANTS: Variant[] = [
  { verdict: 'healthy', breakIt: async () => {}, smi: { capture: 'h200x2__580.159.04__linux-idle' } },
  {
    verdict: 'no_gpu_on_pci',
    breakIt: async (root) => {
      for (const gpu of GPUS) await rm(pci(root, gpu), { recursive: true });
    },
    smi: { capture: 'h200x2__580.159.04__no-devices' },
  },
  {
    verdict: 'nouveau_active',
    breakIt: async (root) => {
      await writeFile(join(root, 'proc/modules'), 'nouveau 2 0 - Live 0x0\ndrm_ttm_helper 1 0 - Live 0x0\n');
      await withoutModuleVersion(root);
      for (const gpu of GPUS) {
        await rm(join(pci(root, gpu), 'driver'));
        await symlink('../../../bus/pci/drivers/nouveau', join(pci(root, gpu), 'driver'));
      }
    },
    smi: { capture: 'constructed__driver-unreachable' },
  },
  {
    verdict: 'kernel_module_missing_for_running_kernel',
    breakIt: async (root) => {
      await unloadNvidia(root);
      await withoutModuleVersion(root);
      await unbind(root);
      await moduleFile(root, '6.8.0-45-generic');
      await mkdir(join(root, 'lib/modules/6.18.44-fc-v657-gpu/kernel'), { recursive: true });
    },
    smi: { capture: 'constructed__driver-unreachable' },
  },
  {
    verdict: 'module_not_loaded',
    breakIt: async (root) => {
      await unloadNvidia(root);
      await withoutModuleVersion(root);
      await unbind(root);
      await moduleFile(root, '6.18.44-fc-v657-gpu');
    },
    smi: { capture: 'constructed__driver-unreachable' },
  },
  {
    verdict: 'container_without_gpu',
    breakIt: async (root) => {
      for (const node of ['nvidiactl', 'nvidia0', 'nvidia1', 'nvidia-uvm', 'nvidia-uvm-tools']) await rm(join(root, 'dev', node));
    },
    smi: { capture: 'constructed__nvml-unknown-error' },
  },
  {
    verdict: 'device_nodes_missing',
    breakIt: async (root) => {
      await rm(join(root, '.dockerenv'));
      await rm(join(root, 'dev/nvidiactl'));
    },
    smi: { capture: 'h200x2__580.159.04__gpu-access-blocked' },
  },
  {
    verdict: 'device_permission_denied',
    breakIt: async (root) => {
      for (const node of ['nvidiactl', 'nvidia0', 'nvidia1']) await chmod(join(root, 'dev', node), 0o600);
    },
    smi: { capture: 'h200x2__580.159.04__gpu-access-blocked' },
    unprivileged: true,
  },
  {
    verdict: 'driver_library_mismatch',
    breakIt: async (root) => {
      const lib = join(root, 'usr/local/nvidia/lib64');
      await rm(join(lib, 'libnvidia-ml.so.580.159.04'));
      await writeFile(join(lib, 'libnvidia-ml.so.580.142'), '');
    },
    smi: { capture: 'constructed__driver-library-mismatch' },
  },
  {
    verdict: 'nvml_library_missing',
    breakIt: async (root) => {
      await rm(join(root, 'usr/local/nvidia/lib64'), { recursive: true });
    },
    smi: { capture: 'h200x2__580.159.04__nvml-library-missing' },
  },
  { verdict: 'nvidia_smi_missing', breakIt: async () => {}, smi: { path: '/nonexistent/nvidia-smi' } },
  {
    verdict: 'hybrid_gpu_powered_down',
    breakIt: async (root) => {
      const intel = pci(root, '0000:00:02.0');
      await mkdir(join(intel, 'power'), { recursive: true });
      await writeFile(join(intel, 'vendor'), '0x8086\n');
      await writeFile(join(intel, 'class'), '0x030000\n');
      await writeFile(join(intel, 'device'), '0x46a6\n');
      await writeFile(join(intel, 'power/runtime_status'), 'active\n');
      for (const gpu of GPUS) {
        await writeFile(join(pci(root, gpu), 'power/runtime_status'), 'suspended\n');
        await writeFile(join(pci(root, gpu), 'power_state'), 'D3cold\n');
      }
    },
    smi: { capture: 'h200x2__580.159.04__no-devices' },
  },
  {
    verdict: 'gpu_lost',
    breakIt: async (root) => {
      const log = await readFile(join(root, 'dev/kmsg'), 'utf8');
      await writeFile(
        join(root, 'dev/kmsg'),
        `${log}[ 8812.311] NVRM: Xid (PCI:0000:00:07): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n`,
      );
    },
    smi: { capture: 'h200x2__580.159.04__gpu-lost' },
  },
  { verdict: 'nvidia_smi_failed', breakIt: async () => {}, smi: { path: join(FAKE_BIN, 'exit') } },
];

async function doctor(root: string, variant: Variant, ...more: string[]) {
  const args = ['doctor', '--root', root, '--nvidia-smi', variant.smi.path ?? FAKE_SMI, '--timeout', '5s', ...more];
  const env = { FAKE_SMI_CAPTURE: variant.smi.capture ? capture(variant.smi.capture) : undefined, FAKE_SMI_EXIT: '3' };
  if (variant.unprivileged && process.getuid?.() === 0) {
    // root may read and write anything: run as nobody, which may read the tree but not use 0600 nodes.
    await execa('chmod', ['-R', 'a+rX', join(root, '..')]);
    return execa('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, CLI, ...args], {
      env: cliEnv(env),
      extendEnv: false,
      reject: false,
    });
  }
  return runCli(args, env);
}

describe('gpu-textfile doctor', () => {
  it('has a variant for every verdict', () => {
    expect(VARIANTS.map((v) => v.verdict).sort()).toEqual([...VERDICTS].sort());
  });

  it.each(VARIANTS)('$verdict', async (variant) => {
    const root = await tree();
    await variant.breakIt(root);
    const result = await doctor(root, variant, '--json');
    expect(result.stderr).toBe('');
    const diagnosis = JSON.parse(result.stdout) as {
      verdict: string;
      checks: { id: string; status: string; fix: string[]; summary: string }[];
    };
    expect(diagnosis.verdict).toBe(variant.verdict);
    expect(result.exitCode).toBe(variant.verdict === 'healthy' ? 0 : 1);
    const failing = diagnosis.checks.filter((c) => c.status === 'fail');
    if (variant.verdict === 'healthy') expect(failing).toEqual([]);
    else expect(failing.length).toBeGreaterThan(0);
    for (const check of failing) expect([check.id, check.fix.length > 0]).toEqual([check.id, true]);
  });

  it('prints one line per check with its mark, the fixes, and the verdict', async () => {
    const root = await tree();
    const variant = VARIANTS.find((v) => v.verdict === 'module_not_loaded')!;
    await variant.breakIt(root);
    const result = await doctor(root, variant);
    expect(result.stdout).toMatch(/^! pci_device +2 NVIDIA device\(s\), 2 bound to no driver$/m);
    expect(result.stdout).toMatch(/^✗ kernel_module +the nvidia kernel module is not loaded$/m);
    expect(result.stdout).toMatch(/^ {4}fix: sudo modprobe nvidia$/m);
    expect(result.stdout).toMatch(/^– hybrid_graphics /m);
    expect(result.stdout.trimEnd().split('\n').pop()).toBe('verdict: module_not_loaded');
  });

  it('--only runs the named checks', async () => {
    const root = await tree();
    const result = await doctor(root, VARIANTS[0]!, '--json', '--only', 'kernel-module', '--only', 'nouveau');
    expect((JSON.parse(result.stdout) as { checks: { id: string }[] }).checks.map((c) => c.id)).toEqual(['kernel_module', 'nouveau']);
  });

  it('--only with a name that is no check is a usage error listing the checks, and runs nothing', async () => {
    const result = await runCli(['doctor', '--root', await tree(), '--only', 'kernel-module', '--only', 'nope']);
    expect([result.exitCode, result.stdout]).toEqual([2, '']);
    expect(result.stderr).toBe(`gpu-textfile: --only: "nope" is no check; the checks are ${DOCTOR_CHECKS.join(', ')}\n`);
  });

  it('--only reports on what it ran: a failing nvidia-smi is not the verdict of --only kernel-module', async () => {
    const root = await tree();
    const result = await runCli([
      'doctor',
      '--root',
      root,
      '--nvidia-smi',
      join(root, 'no-such-nvidia-smi'),
      '--json',
      '--only',
      'kernel_module',
    ]);
    const diagnosis = JSON.parse(result.stdout) as { verdict: string; checks: { id: string }[] };
    expect([result.exitCode, diagnosis.verdict, diagnosis.checks.map((c) => c.id)]).toEqual([0, 'healthy', ['kernel_module']]);
    const all = await runCli([
      'doctor',
      '--root',
      root,
      '--nvidia-smi',
      join(root, 'no-such-nvidia-smi'),
      '--json',
      '--only',
      'kernel-module',
      '--only',
      'nvidia-smi',
    ]);
    expect([all.exitCode, (JSON.parse(all.stdout) as { verdict: string }).verdict]).toEqual([1, 'nvidia_smi_missing']);
  });

  it('the names --only takes are the ids the checks report, in order', async () => {
    const result = await doctor(await tree(), VARIANTS[0]!, '--json');
    expect((JSON.parse(result.stdout) as { checks: { id: string }[] }).checks.map((c) => c.id.replace(/_/g, '-'))).toEqual([
      ...DOCTOR_CHECKS,
    ]);
  });

  it('explains each Xid in the kernel log', async () => {
    const root = await tree();
    await writeFile(
      join(root, 'dev/kmsg'),
      '4,881,8812311,-;NVRM: Xid (PCI:0000:00:06): 48, pid=2006, name=python3, DBE (double bit error) ECC error.\n',
    );
    const result = await doctor(root, VARIANTS[0]!, '--json');
    const log = (JSON.parse(result.stdout) as { checks: { id: string; status: string; evidence: string[] }[] }).checks.find(
      (c) => c.id === 'kernel_log',
    )!;
    expect(log.status).toBe('warn');
    expect(log.evidence).toContain('Xid 48: double-bit (uncorrectable) ECC error: the process using that memory was killed');
  });
});

// Issue 39: in a container started without GPUs, doctor led with no_gpu_on_pci and "check the card is
// seated"; the right check (the container's, --gpus all) came further down, and nvidia_smi said its
// message twice.
describe('in a container started without the GPU', () => {
  it('the container check comes first and names the cause; no advice about seating a card; each message once', async () => {
    const { healthyFacts } = await import('./checks/healthy-host.js');
    const { diagnose, formatDiagnosis } = await import('../../src/doctor/index.js');
    const facts = await healthyFacts();
    const diagnosis = diagnose({
      ...facts,
      pci: [],
      deviceNodes: facts.deviceNodes.map((node) => ({ ...node, exists: false })),
      smi: { outcome: { kind: 'not-found', command: 'nvidia-smi' }, persistence: [] },
    });
    expect(diagnosis.checks[0]).toMatchObject({ id: 'container', status: 'fail' });
    expect(diagnosis.verdict).toBe('container_without_gpu');
    const text = formatDiagnosis(diagnosis);
    expect(text).not.toMatch(/seated/);
    expect(text).toMatch(/lspci -d 10de: on the host/);
    const smiLines = text.split('\n').filter((line) => line.includes('nvidia-smi not found'));
    expect(smiLines).toHaveLength(1);
  });
});
