import { cp, writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { failedCollection } from '../../src/collection.js';
import { withDiagnosis } from '../../src/doctor/quick.js';
import { hostAt } from '../../src/host/host.js';
import { checkExposition } from '../../src/exposition/check.js';
import { render } from '../../src/exposition/render.js';
import { buildFamilies } from '../../src/metrics/metrics.js';
import { FIXTURES, tempDir } from '../support/helpers.js';

async function brokenHost(): Promise<string> {
  const root = join(await tempDir(), 'root');
  await cp(join(FIXTURES, 'hosts/h200x2-healthy'), root, { recursive: true, verbatimSymlinks: true });
  await writeFile(join(root, 'proc/modules'), 'kvm 1 0 - Live 0x0\n');
  await rm(join(root, 'proc/driver/nvidia'), { recursive: true });
  return root;
}

describe('withDiagnosis (collect sharpens its failure with the file checks)', () => {
  it('names the cause when nvidia-smi cannot reach the driver', async () => {
    const failed = failedCollection({ reason: 'driver_unreachable', message: 'exit 9' }, 0.1);
    const sharpened = await withDiagnosis(failed, hostAt(await brokenHost()));
    expect(sharpened.health.diagnosis).toEqual({ verdict: 'module_not_loaded', summary: 'the nvidia kernel module is not loaded' });
    const samples = checkExposition(render(buildFamilies(sharpened))).samples;
    expect(samples.find((s) => s.name === 'nvidia_gpu_collector_diagnosis')?.labels).toEqual({ verdict: 'module_not_loaded' });
  });
  it('leaves failures the host files cannot explain alone', async () => {
    const failed = failedCollection({ reason: 'timeout', message: 'hung' }, 10);
    expect(await withDiagnosis(failed, hostAt(await brokenHost()))).toBe(failed);
  });
  it('says nothing when the files look healthy', async () => {
    const failed = failedCollection({ reason: 'nvml_unknown_error', message: 'x' }, 0.1);
    expect((await withDiagnosis(failed, hostAt(join(FIXTURES, 'hosts/h200x2-healthy')))).health.diagnosis).toBeUndefined();
  });
});
