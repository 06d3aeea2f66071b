import { execa } from 'execa';
import { cp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { capture, CLI, cliEnv, eventually, FAKE_SMI, runCli, tempDir, madeDir } from '../support/helpers.js';

const LOAD = 'h200x2__580.159.04__linux-load';

describe("a peer's file --compat no longer asks for", () => {
  const collect = (dir: string, more: string[]) =>
    runCli(['collect', '--nvidia-smi', FAKE_SMI, '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), ...more], {
      FAKE_SMI_CAPTURE: capture(LOAD),
    });

  it('is removed by the next collect: its names carry no time, so left behind it would show the last values for ever', async () => {
    const dir = await tempDir();
    expect((await collect(dir, ['--compat', 'dcgm,nvidia_gpu_exporter'])).exitCode).toBe(0);
    expect((await readdir(join(dir, 't'))).sort()).toEqual([
      'nvidia_gpu.prom',
      'nvidia_gpu_dcgm.prom',
      'nvidia_gpu_nvidia_gpu_exporter.prom',
    ]);
    const one = await collect(dir, ['--compat', 'nvidia_gpu_exporter']);
    expect([one.exitCode, one.stderr]).toEqual([0, '']);
    expect((await readdir(join(dir, 't'))).sort()).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_nvidia_gpu_exporter.prom']);
    const none = await collect(dir, []);
    expect([none.exitCode, none.stderr]).toEqual([0, '']);
    expect(await readdir(join(dir, 't'))).toEqual(['nvidia_gpu.prom']);
  });

  it('is named after --file-name: the files of another --file-name, and --dry-run, leave it alone', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 't'));
    await writeFile(join(dir, 't/nvidia_gpu_dcgm.prom'), 'x 1\n');
    expect((await collect(dir, ['--file-name', 'gpus.prom'])).exitCode).toBe(0);
    expect((await collect(dir, ['--dry-run'])).exitCode).toBe(0);
    expect((await readdir(join(dir, 't'))).sort()).toEqual(['gpus.prom', 'nvidia_gpu_dcgm.prom']);
  });

  it('is removed by the daemon mode when it starts', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 't'));
    await writeFile(join(dir, 't/nvidia_gpu_dcgm.prom'), 'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 33\n');
    const args = [
      'collect',
      '--interval',
      '200ms',
      '--nvidia-smi',
      FAKE_SMI,
      '--textfile-dir',
      madeDir(join(dir, 't')),
      '--state-dir',
      join(dir, 's'),
    ];
    const child = execa(process.execPath, [CLI, ...args], {
      env: cliEnv({ FAKE_SMI_CAPTURE: capture(LOAD) }),
      extendEnv: false,
      reject: false,
    });
    onTestFinished(async () => {
      child.kill('SIGTERM');
      await child;
    });
    const files = async () => (await readdir(join(dir, 't'))).filter((name) => !name.startsWith('.')).sort();
    expect(await eventually(async () => (await files()).join() === 'nvidia_gpu.prom', 30_000)).toBe(true);
  });
});

describe('GPU_TEXTFILE_COMPAT as /etc/default/gpu-textfile gives it', () => {
  const collect = (dir: string, compat: string) =>
    runCli(['collect', '--nvidia-smi', FAKE_SMI, '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's')], {
      FAKE_SMI_CAPTURE: capture(LOAD),
      GPU_TEXTFILE_COMPAT: compat,
    });

  it('a list separated by spaces, as the file says lists are written, is a list', async () => {
    const dir = await tempDir();
    const result = await collect(dir, 'dcgm nvidia_gpu_exporter');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect((await readdir(join(dir, 't'))).sort()).toEqual([
      'nvidia_gpu.prom',
      'nvidia_gpu_dcgm.prom',
      'nvidia_gpu_nvidia_gpu_exporter.prom',
    ]);
  });

  it('an empty value (a setting blanked out) asks for no peer, rather than failing every run with exit 2', async () => {
    const dir = await tempDir();
    const result = await collect(dir, '');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    expect(await readdir(join(dir, 't'))).toEqual(['nvidia_gpu.prom']);
  });
});

describe('collect --compat nvidia_gpu_exporter when the processes cannot be read', () => {
  it('says so in the peer file (success 0, no count), as it does in ours with a warning', async () => {
    const dir = await tempDir();
    // The recording without its compute apps: the stand-in then refuses --query-compute-apps.
    await cp(capture(LOAD), join(dir, 'capture'), { recursive: true });
    await rm(join(dir, 'capture/query-compute-apps.csv'));
    const args = ['--nvidia-smi', FAKE_SMI, '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's')];
    const result = await runCli(['collect', '--compat', 'nvidia_gpu_exporter', ...args], { FAKE_SMI_CAPTURE: join(dir, 'capture') });
    expect([result.exitCode, result.stderr]).toEqual([0, expect.stringContaining('processes left out')]);
    const text = await readFile(join(dir, 't/nvidia_gpu_nvidia_gpu_exporter.prom'), 'utf8');
    expect(text).toMatch(/^nvidia_smi_compute_apps_last_collect_success 0$/m);
    expect(text).not.toMatch(/^nvidia_smi_compute_apps\{/m);
  });
});
