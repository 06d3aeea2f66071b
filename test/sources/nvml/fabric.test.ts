import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../../src/exposition/check.js';
import { capture, runCli, tempDir } from '../../support/helpers.js';
import { standInConfig, standInLibrary } from '../../support/nvml-stand-in.js';

// The NVLink fabric state (nvmlDeviceGetGpuFabricInfo) through the NVML stand-in: a state set where the
// GPU has a fabric, no series where NVML says it has none (a PCIe card: never a "Not_Supported" state).

const LOAD = 'h200x2__580.159.04__linux-load';

async function collect(keys: string[]) {
  const dir = await tempDir();
  const config = join(dir, 'stand-in.conf');
  await writeFile(config, standInConfig(capture(LOAD), keys));
  const run = await runCli(
    ['collect', '--dry-run', '--source', 'nvml', '--nvml-library', standInLibrary(), '--state-dir', join(dir, 's')],
    {
      NVML_STAND_IN: config,
    },
  );
  expect([run.exitCode, run.stderr]).toEqual([0, '']);
  const exposition = checkExposition(run.stdout);
  expect(exposition.problems).toEqual([]);
  return exposition.samples.filter((s) => s.name === 'nvidia_gpu_fabric_state').map((s) => [s.labels.gpu, s.labels.state, s.value]);
}

describe('nvidia_gpu_fabric_state (--source nvml)', () => {
  it('is a state set of the GPU that has a fabric, whatever its status (nvml.h: read only once Completed); the one whose state is Not Supported has none', async () => {
    expect(await collect(['0.fabric_state=3', '1.fabric_state=0'])).toEqual([
      ['0', 'Not_Supported', 0],
      ['0', 'Not_Started', 0],
      ['0', 'In_Progress', 0],
      ['0', 'Completed', 1],
    ]);
    expect(await collect(['0.fabric_state=2', '0.fabric_status=3', '1.fabric_state=1'])).toEqual([
      ['0', 'Not_Supported', 0],
      ['0', 'Not_Started', 0],
      ['0', 'In_Progress', 1],
      ['0', 'Completed', 0],
      ['1', 'Not_Supported', 0],
      ['1', 'Not_Started', 1],
      ['1', 'In_Progress', 0],
      ['1', 'Completed', 0],
    ]);
  });

  it('is absent where NVML has no fabric info (NOT_SUPPORTED: no NVSwitch), never a 0', async () => {
    expect(await collect([])).toEqual([]);
  });
});

describe('nvidia_gpu_fabric_state, a state NVML may add later', () => {
  it('a state past Completed is no state of ours: no series, not a wrong one', async () => {
    const dir = await tempDir();
    const config = join(dir, 'stand-in.conf');
    await writeFile(config, standInConfig(capture(LOAD), ['0.fabric_state=4']));
    const run = await runCli(
      ['collect', '--dry-run', '--source', 'nvml', '--nvml-library', standInLibrary(), '--state-dir', join(dir, 's')],
      {
        NVML_STAND_IN: config,
      },
    );
    expect(run.exitCode).toBe(0);
    expect(checkExposition(run.stdout).samples.filter((s) => s.name === 'nvidia_gpu_fabric_state')).toEqual([]);
  });
});
