import { describe, expect, it } from 'vitest';
import { moduleForKernel } from '../../../src/doctor/checks/module-for-kernel.js';
import { healthyFacts } from './healthy-host.js';

describe('module-for-kernel', () => {
  it('passes while the module is loaded', async () => {
    expect(moduleForKernel(await healthyFacts()).status).toBe('ok');
  });
  it('skips when /lib/modules cannot be read (the healthy VM has none) and nvidia is not loaded', async () => {
    const check = moduleForKernel({ ...(await healthyFacts()), modules: new Set() });
    expect(check.status).toBe('skip');
  });
  it('fails when only another kernel has a module: kernel_module_missing_for_running_kernel', async () => {
    const check = moduleForKernel({
      ...(await healthyFacts()),
      modules: new Set(),
      libModulesVisible: true,
      moduleFilesForOthers: ['/lib/modules/6.8.0-45-generic/updates/dkms/nvidia.ko.zst'],
    });
    expect([check.status, check.verdict]).toEqual(['fail', 'kernel_module_missing_for_running_kernel']);
    expect(check.summary).toMatch(/only for other kernels/);
  });
  it('passes when a module exists for the running kernel but is not loaded', async () => {
    const facts = { ...(await healthyFacts()), modules: new Set<string>(), libModulesVisible: true };
    const check = moduleForKernel({ ...facts, moduleFilesForRunning: [`/lib/modules/${facts.kernelRelease}/updates/dkms/nvidia.ko.zst`] });
    expect(check.status).toBe('ok');
  });
});
