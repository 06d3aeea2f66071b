import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { capture, tempDir, madeDir } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { collectWithStandIn, NVML_CALLS, standInConfig } from '../support/nvml-stand-in.js';

// A MIG host through the NVML stand-in, with the layout and GPM values constructed in
// test/fixtures/nvml-calls/h200-mig__590.48.01__constructed/ (as test/sources/nvml/mig-gpm.test.ts).

const MIG = capture('h200-mig__590.48.01__linux-load');
const keys = async (file: string): Promise<string[]> =>
  (await readFile(join(NVML_CALLS, 'h200-mig__590.48.01__constructed', file), 'utf8'))
    .split('\n')
    .filter((line) => line.includes('=') && !line.startsWith('#'));

describe('collect --compat dcgm on a MIG host', () => {
  it("gives each GPU instance's profiling ratios and memory with GPU_I_PROFILE and GPU_I_ID, in a file node_exporter accepts", async () => {
    const dir = await tempDir();
    const textfile = madeDir(join(dir, 't'));
    const exporter = await startNodeExporter(textfile);
    onTestFinished(() => exporter.stop());
    const config = standInConfig(MIG, [...(await keys('mig.conf')), ...(await keys('mig-gpm.conf'))]);
    const result = await collectWithStandIn(config, '--compat', 'dcgm', '--textfile-dir', textfile, '--gpm-window', '20ms');
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const scraped = checkExposition(await exporter.scrape()).samples;
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    for (const [dcgmName, ourName] of [
      ['DCGM_FI_PROF_SM_ACTIVE', 'nvidia_gpu_mig_sm_active_ratio'],
      ['DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'nvidia_gpu_mig_graphics_active_ratio'],
    ]) {
      const ours = scraped
        .filter((s) => s.name === ourName)
        .map((s) => [s.labels.mig_profile, s.labels.gpu_instance, s.value])
        .sort();
      const dcgm = scraped
        .filter((s) => s.name === dcgmName && (s.labels.GPU_I_ID ?? '') !== '')
        .map((s) => [s.labels.GPU_I_PROFILE, s.labels.GPU_I_ID, s.value])
        .sort();
      expect(ours.length, ourName).toBeGreaterThan(1);
      expect(dcgm, dcgmName).toEqual(ours);
    }
    // Each GPU instance's memory in MiB, once per GPU instance (its compute instances share it), as ours has it per MIG device.
    const ourMemory = new Map(
      scraped
        .filter((s) => s.name === 'nvidia_gpu_mig_memory_used_bytes')
        .map((s) => [s.labels.gpu_instance, s.value / (1024 * 1024)] as const),
    );
    const fbUsed = scraped
      .filter((s) => s.name === 'DCGM_FI_DEV_FB_USED' && (s.labels.GPU_I_ID ?? '') !== '')
      .map((s) => [s.labels.GPU_I_ID, s.labels.GPU_I_PROFILE, s.value]);
    expect(fbUsed.map(([id]) => id).sort()).toEqual([...ourMemory.keys()].sort());
    for (const [id, , value] of fbUsed) expect(value, String(id)).toBe(ourMemory.get(String(id)));
    expect(fbUsed.find(([id]) => id === '1')?.[1]).toBe('3g.71gb');
    // The whole GPU's series is there too, with the MIG labels empty (Prometheus drops an empty label).
    const whole = scraped.filter((s) => s.name === 'DCGM_FI_PROF_SM_ACTIVE' && (s.labels.GPU_I_ID ?? '') === '');
    expect(whole.map((s) => s.value)).toEqual(scraped.filter((s) => s.name === 'nvidia_gpu_sm_active_ratio').map((s) => s.value));
    const text = await readFile(join(textfile, 'nvidia_gpu_dcgm.prom'), 'utf8');
    const promtool = await execa('promtool', ['check', 'metrics'], { input: text, reject: false });
    const lint = `${promtool.stdout}\n${promtool.stderr}`.split('\n').filter((line) => line.trim() !== '');
    expect(
      lint.filter(
        (line) =>
          !/^DCGM_\w+ (label names should be written in 'snake_case' not 'camelCase'|counter metrics should have "_total" suffix)$/.test(
            line,
          ),
      ),
    ).toEqual([]);
  });
});
