import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkExposition, type ParsedSample } from '../../src/exposition/check.js';
import { ATTRIBUTED, attributionHost } from '../support/attribution-host.js';
import { FAKE_BIN, FAKE_SMI, FIXTURES, capture, runCli, madeDir } from '../support/helpers.js';
import { startNodeExporter, type NodeExporter } from '../support/node-exporter.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';

// Our families and node_exporter's verdict on our file, as node_exporter serves them.
const ours = (text: string): ParsedSample[] =>
  checkExposition(text).samples.filter((s) => s.name.startsWith('nvidia_gpu_') || s.name === 'node_textfile_scrape_error');

/** Values that change from run to run, replaced so the rest can be compared with the golden file. */
const VARYING = new Set(['nvidia_gpu_collector_duration_seconds', 'nvidia_gpu_collector_last_success_timestamp_seconds']);
/** The owner of a recorded pid depends on the machine the test runs on. */
const withoutUser = ({ user: _, ...labels }: Record<string, string>) => labels;
const stable = (samples: ParsedSample[]) =>
  `${samples.map((s) => `${s.name}${JSON.stringify(withoutUser(s.labels))} ${VARYING.has(s.name) ? '<varies>' : s.value}`).join('\n')}\n`;

describe('the real node_exporter serving our textfile', () => {
  let dir: string;
  let exporter: NodeExporter;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-e2e-'));
    exporter = await startNodeExporter(join(dir, 'textfile'));
  });
  afterAll(async () => {
    await exporter?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const collect = (smi: string, env: Record<string, string> = {}, ...more: string[]) =>
    runCli(
      ['collect', '--textfile-dir', madeDir(join(dir, 'textfile')), '--state-dir', join(dir, 'state'), '--nvidia-smi', smi, ...more],
      env,
    );

  it('shows our series with the right values and node_textfile_scrape_error 0', async () => {
    // A host tree whose kernel log holds Xid lines: the counters are served too, the same on every machine.
    const host = join(FIXTURES, 'hosts/xid-kmsg');
    const result = await collect(FAKE_SMI, { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') }, '--host-root', host);
    expect(result.exitCode).toBe(0);
    const scraped = ours(await exporter.scrape());
    const value = (name: string, labels: Record<string, string> = {}) =>
      scraped.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(value('node_textfile_scrape_error'), exporter.log()).toBe(0);
    expect(value('nvidia_gpu_memory_total_bytes', { gpu: '1' })).toBe(143771 * 1048576);
    expect(value('nvidia_gpu_power_draw_watts', { gpu: '0' })).toBe(76.68);
    expect(value('nvidia_gpu_collector_success')).toBe(1);
    await expect(stable(scraped)).toMatchFileSnapshot('../golden/e2e.prom');
  });

  // node_exporter fills a label a series lacks with "" itself; our file already has one label set
  // per family, so what it serves is what we wrote.
  it('serves the attribution labels read from /proc/PID/cgroup under --host-root', async () => {
    const host = await attributionHost(join(dir, 'host'));
    const result = await collect(FAKE_SMI, { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load') }, '--host-root', host);
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const scraped = ours(await exporter.scrape());
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    const processes = scraped
      .filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes')
      .map(({ labels: { gpu, pid, user, container_id, pod_uid, systemd_unit, slurm_job } }) => ({
        gpu,
        pid,
        labels: { user, container_id, pod_uid, systemd_unit, slurm_job },
      }));
    expect(processes).toEqual(
      expect.arrayContaining([
        { gpu: '0', pid: '2006', labels: ATTRIBUTED['2006'] },
        { gpu: '0', pid: '2007', labels: ATTRIBUTED['2007'] },
        { gpu: '0', pid: '2008', labels: ATTRIBUTED['2008'] },
        { gpu: '1', pid: '2008', labels: ATTRIBUTED['2008'] },
      ]),
    );
    expect(processes).toHaveLength(4);
  });

  it.each([
    ['nvidia-smi missing', join(FAKE_BIN, 'no-such-nvidia-smi'), {}, 'nvidia_smi_not_found'],
    ['driver unreachable', FAKE_SMI, { FAKE_SMI_CAPTURE: capture('constructed__driver-unreachable') }, 'driver_unreachable'],
    ['GPU access blocked', FAKE_SMI, { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__gpu-access-blocked') }, 'gpu_access_blocked'],
    ['garbage', join(FAKE_BIN, 'garbage'), {}, 'unparsable_output'],
    ['hang', join(FAKE_BIN, 'hang'), {}, 'timeout'],
  ] as const)('after %s it shows the health block and no GPU values', async (_, smi, env, reason) => {
    const good = await collect(FAKE_SMI, { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') });
    expect(good.exitCode).toBe(0);
    // A short deadline only where the stand-in hangs: on a busy machine the others may take longer.
    const result = await collect(smi, { ...env }, '--timeout', reason === 'timeout' ? '500ms' : '20s');
    expect(result.exitCode).toBe(1);
    const scraped = ours(await exporter.scrape());
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    // Xid counts stay: they are read from the kernel log this run, not from the GPUs, and matter most when the GPUs fail.
    const gpuValues = scraped.filter(
      (s) =>
        !s.name.startsWith('nvidia_gpu_collector_') && s.name !== 'node_textfile_scrape_error' && s.name !== 'nvidia_gpu_xid_errors_total',
    );
    expect(gpuValues).toEqual([]);
    expect(scraped.find((s) => s.name === 'nvidia_gpu_collector_success')?.value).toBe(0);
    expect(scraped.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels.reason).toBe(reason);
  });
});
