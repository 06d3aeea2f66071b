import { execa } from 'execa';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { capture, FAKE_SMI, FIXTURES, runCli, tempDir, madeDir } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';

// nvidia_gpu_exporter's own Xid alerts (its Helm chart's NvidiaGpuXidCritical/Warning, vendored in
// test/fixtures/compat/) on the --compat nvidia_gpu_exporter file of a host whose kernel log holds Xids:
// they select nvidia_smi_xid_last_timestamp_seconds, the time of each GPU's last Xid of a code.

const LOAD = 'h200x2__580.159.04__linux-load';
/** The boot time written into the host's /proc/stat (2025-12-01). */
const BTIME = 1_764_547_200;

/** The kernel log's Xid records, read apart from the code under test: uuid-less (bus, xid, seconds since boot) of the last of each. */
async function loggedXids(): Promise<Map<string, number>> {
  const last = new Map<string, number>();
  for (const line of (await readFile(join(FIXTURES, 'hosts/xid-kmsg/dev/kmsg'), 'utf8')).split('\n')) {
    const match = /^\d+,\d+,(\d+),[^;]*;NVRM: Xid \(PCI:([0-9a-f:]+)\): (\d+),/.exec(line);
    if (match) last.set(`${match[2]}/${match[3]}`, Math.max(last.get(`${match[2]}/${match[3]}`) ?? 0, Math.floor(Number(match[1]) / 1e6)));
  }
  return last;
}

describe('nvidia_smi_xid_last_timestamp_seconds and the chart Xid alerts', () => {
  it('the kernel log time of the last Xid per GPU and code; NvidiaGpuXidCritical fires on the GPU that logged Xid 79, nothing else fires', async () => {
    const dir = await tempDir();
    const root = join(dir, 'root');
    await cp(join(FIXTURES, 'hosts/xid-kmsg'), root, { recursive: true });
    await writeFile(join(root, 'proc/stat'), `cpu  1 2 3 4 5 6 7 0 0 0\nintr 1 2 3\nctxt 99\nbtime ${BTIME}\nprocesses 4\n`);
    const textfile = madeDir(join(dir, 't'));
    const exporter = await startNodeExporter(textfile);
    onTestFinished(() => exporter.stop());
    const result = await runCli(
      [
        'collect',
        '--compat',
        'nvidia_gpu_exporter',
        '--nvidia-smi',
        FAKE_SMI,
        '--host-root',
        root,
        '--textfile-dir',
        textfile,
        '--state-dir',
        join(dir, 's'),
      ],
      { FAKE_SMI_CAPTURE: capture(LOAD) },
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const scraped = checkExposition(await exporter.scrape()).samples;
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    const info = scraped.filter((s) => s.name === 'nvidia_smi_gpu_info');
    const busOf = (uuid: string) =>
      info
        .find((s) => s.labels.uuid === uuid)!
        .labels.pci_bus_id!.replace(/^0000(?=[0-9a-f]{4}:)/i, '')
        .slice(0, -2)
        .toLowerCase();
    const last = scraped.filter((s) => s.name === 'nvidia_smi_xid_last_timestamp_seconds');
    const logged = await loggedXids();
    expect(last.map((s) => [`${busOf(s.labels.uuid!)}/${s.labels.xid}`, s.value]).sort()).toEqual(
      [...logged].map(([key, seconds]) => [key, BTIME + seconds]).sort(),
    );

    // promtool: the scraped series as a Prometheus would store them, a minute after the last Xid 79.
    const xid79 = last.find((s) => s.labels.xid === '79')!;
    const at = xid79.value;
    const withTarget = (labels: Record<string, string>) => ({ ...labels, instance: 'gpu-node-1:9100', job: 'node' });
    const series = (labels: Record<string, string>) =>
      `nvidia_smi_xid_last_timestamp_seconds{${Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(', ')}}`;
    const test = {
      rule_files: [join(FIXTURES, 'compat/nvidia-gpu-exporter-xid-alerts.yml')],
      // Unix times: one evaluation at 0 and one at the time the alerts are looked at, not one a minute since 1970.
      evaluation_interval: `${at + 60}s`,
      tests: [
        {
          interval: `${at}s`,
          input_series: last.map((s) => ({ series: series(withTarget(s.labels)), values: `${s.value} ${s.value}` })),
          alert_rule_test: [
            {
              eval_time: `${at + 60}s`,
              alertname: 'NvidiaGpuXidCritical',
              exp_alerts: [{ exp_labels: { ...withTarget(xid79.labels), severity: 'critical' } }],
            },
            { eval_time: `${at + 60}s`, alertname: 'NvidiaGpuXidWarning', exp_alerts: [] },
          ],
        },
      ],
    };
    await writeFile(join(dir, 'alerts.test.yml'), JSON.stringify(test));
    const run = await execa('promtool', ['test', 'rules', join(dir, 'alerts.test.yml')], { reject: false, timeout: 60_000 });
    expect({ exit: run.exitCode, out: run.stdout + run.stderr }).toMatchObject({ exit: 0 });
  });
});
