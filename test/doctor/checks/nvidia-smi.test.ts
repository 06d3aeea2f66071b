import { describe, expect, it } from 'vitest';
import { nvidiaSmi } from '../../../src/doctor/checks/nvidia-smi.js';
import { healthyFacts, recordedFailure } from './healthy-host.js';

describe('nvidia-smi', () => {
  it('passes when nvidia-smi answered, its lines the evidence', async () => {
    const check = nvidiaSmi(await healthyFacts());
    expect([check.status, check.evidence]).toEqual(['ok', ['0, 00000000:00:06.0, Enabled', '1, 00000000:00:07.0, Enabled']]);
  });
  it('skips when nvidia-smi was not run (--only without it)', async () => {
    expect(nvidiaSmi({ ...(await healthyFacts()), smi: undefined }).status).toBe('skip');
  });
  it.each([
    ['h200x2__580.159.04__gpu-access-blocked', 'device_permission_denied'],
    ['h200x2__580.159.04__nvml-library-missing', 'nvml_library_missing'],
    ['constructed__driver-library-mismatch', 'driver_library_mismatch'],
    ['constructed__driver-unreachable', 'nvidia_smi_failed'],
  ])('fails on the recorded %s with the verdict %s', async (name, verdict) => {
    const check = nvidiaSmi({ ...(await healthyFacts()), smi: { outcome: await recordedFailure(name), persistence: [] } });
    expect([check.status, check.verdict]).toEqual(['fail', verdict]);
    expect(check.fix.length).toBeGreaterThan(0);
  });
  it('fails when nvidia-smi is not on PATH: nvidia_smi_missing', async () => {
    const check = nvidiaSmi({ ...(await healthyFacts()), smi: { outcome: { kind: 'not-found', command: 'nvidia-smi' }, persistence: [] } });
    expect([check.status, check.verdict]).toEqual(['fail', 'nvidia_smi_missing']);
  });
});
