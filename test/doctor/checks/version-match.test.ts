import { describe, expect, it } from 'vitest';
import { versionMatch } from '../../../src/doctor/checks/version-match.js';
import { healthyFacts, recordedFailure } from './healthy-host.js';

describe('version-match', () => {
  it('passes with module and library both 580.159.04', async () => {
    const check = versionMatch(await healthyFacts());
    expect([check.status, check.summary]).toEqual(['ok', 'kernel module and library both 580.159.04']);
  });
  it('fails when the library is newer than the loaded module: driver_library_mismatch', async () => {
    const check = versionMatch({ ...(await healthyFacts()), kernelModuleVersion: '570.86.15' });
    expect([check.status, check.verdict]).toEqual(['fail', 'driver_library_mismatch']);
  });
  it('fails on nvidia-smi\'s own "Driver/library version mismatch" even when the versions read alike', async () => {
    const facts = await healthyFacts();
    const check = versionMatch({
      ...facts,
      smi: { outcome: await recordedFailure('constructed__driver-library-mismatch'), persistence: [] },
    });
    expect(check.verdict).toBe('driver_library_mismatch');
  });
  it('fails with no libnvidia-ml.so: nvml_library_missing', async () => {
    const check = versionMatch({ ...(await healthyFacts()), nvmlLibraries: [] });
    expect([check.status, check.verdict]).toEqual(['fail', 'nvml_library_missing']);
  });
  it('skips when the module version is unknown', async () => {
    expect(versionMatch({ ...(await healthyFacts()), kernelModuleVersion: undefined }).status).toBe('skip');
  });
});
