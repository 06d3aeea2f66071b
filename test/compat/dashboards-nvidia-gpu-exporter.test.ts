import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, eventually, FAKE_SMI, FIXTURES, runCli } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { startPrometheus, type PromSample as Sample } from '../support/prometheus.js';
import { NVML_CALLS, standInConfig, standInLibrary } from '../support/nvml-stand-in.js';
import { PANEL_QUERIES, type PanelQuery, VARIABLES } from './nvidia-gpu-exporter-dashboards.js';
import { recorded } from './recording.js';

// nvidia_gpu_exporter's Grafana dashboards (grafana.com 14574 and 25547) against our --compat
// nvidia_gpu_exporter file: a real Prometheus scraping a real node_exporter per host. Every panel target
// and template variable runs for each host and GPU; the panels that stay empty are listed below, each
// with the reason, and nothing else may be.

const LOAD = 'h200x2__580.159.04__linux-load';
const MIG = 'h200-mig__590.48.01__linux-load';
/** The kernel log with Xid 79 on GPU 0 and two Xid 13 on GPU 1 of the h200x2 captures (test/fixtures/hosts/xid-kmsg/SOURCE.md). */
const XID_HOST = join(FIXTURES, 'hosts/xid-kmsg');
/** PCIe throughput the NVML stand-in answers for each GPU, in KB/s (NVML's unit). */
const PCIE_KB = { tx: 1500, rx: 250 };

type Host = 'smi' | 'nvml' | 'mig';
const key = (q: PanelQuery) => `${q.dashboard} ${q.title}`;

/** The panels without data on each host, and why: the rest must all have data. */
const NO_DATA: Record<Host, Record<string, string>> = {
  smi: {
    '14574 Fan Speed %': 'the H200 has no fan: nvidia-smi prints [N/A], the peer writes nothing either',
    '25547 Fan Speed %': 'the same',
    '14574 Fabric State': "NVML's fabric info (--source nvml), on NVSwitch systems: not this one",
    '14574 PCIe Throughput #1': 'PCIe throughput is NVML-only (--source nvml --slow-fields)',
    '14574 PCIe Throughput #2': 'the same',
    '25547 PCIe TX': 'the same',
    '25547 PCIe RX': 'the same',
    '14574 Power (energy counter vs sampled) #1': 'the energy counter is NVML-only',
    '14574 Energy (trailing 24h)': 'the same',
    '25547 Power Draw (energy counter)': 'the same',
    '14574 MIG Memory Used': 'MIG is off on this host',
    '14574 MIG SM Activity': 'the same',
    '14574 MIG Tensor Activity': 'the same',
    '25547 MIG Instances': 'the same',
    '25547 MIG SM Activity': 'the same',
    '25547 MIG Memory Used': 'the same',
  },
  nvml: {},
  mig: {},
};
// The NVML host's stand-in answers a fabric state, as an NVSwitch system's GPUs do.
NO_DATA.nvml = Object.fromEntries(Object.entries(NO_DATA.smi).filter(([title]) => !/PCIe|energy|Energy|Fabric/.test(title)));
NO_DATA.mig = {
  ...Object.fromEntries(Object.entries(NO_DATA.smi).filter(([title]) => !/MIG/.test(title))),
  '14574 XID Errors by Code': "no Xid in this host's kernel log",
  '14574 GPU Utilization %': 'a MIG-enabled GPU has no whole-GPU utilization (the recording: [N/A])',
  '14574 Memory Utilization %': 'the same for memory utilization',
  '25547 GPU Utilization %': 'the same',
  '25547 Memory Activity %': 'the same',
};

describe('dashboards 14574 and 25547 (nvidia_gpu_exporter) on the --compat nvidia_gpu_exporter file', () => {
  let dir = '';
  const stops: (() => Promise<void>)[] = [];
  const hosts = {} as Record<Host, string>;
  let query: (expr: string) => Promise<Sample[]>;
  let labelValues: (label: string, match: string) => Promise<string[]>;

  async function target(name: Host, args: string[], env: Record<string, string>): Promise<string> {
    const textfile = join(dir, name);
    await mkdir(textfile);
    const result = await runCli(
      ['collect', '--compat', 'nvidia_gpu_exporter', '--textfile-dir', textfile, '--state-dir', join(dir, `${name}-state`), ...args],
      env,
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const exporter = await startNodeExporter(textfile);
    stops.push(exporter.stop);
    return new URL(exporter.url).host;
  }

  const nvmlArgs = ['--source', 'nvml', '--nvml-library', standInLibrary(), '--gpm-window', '20ms'];
  const migKeys = async (file: string): Promise<string[]> =>
    (await readFile(join(NVML_CALLS, 'h200-mig__590.48.01__constructed', file), 'utf8'))
      .split('\n')
      .filter((line) => line.includes('=') && !line.startsWith('#'));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-14574-'));
    hosts.smi = await target('smi', ['--nvidia-smi', FAKE_SMI, '--host-root', XID_HOST], { FAKE_SMI_CAPTURE: capture(LOAD) });
    const nvmlConfig = join(dir, 'nvml.conf');
    await writeFile(
      nvmlConfig,
      standInConfig(
        capture(LOAD),
        [0, 1].flatMap((gpu) => [
          `${gpu}.energy_mj=987654321`,
          `${gpu}.pcie_tx=${PCIE_KB.tx}`,
          `${gpu}.pcie_rx=${PCIE_KB.rx}`,
          `${gpu}.fabric_state=3`,
        ]),
      ),
    );
    hosts.nvml = await target('nvml', [...nvmlArgs, '--slow-fields', '--host-root', XID_HOST], { NVML_STAND_IN: nvmlConfig });
    const migConfig = join(dir, 'mig.conf');
    await writeFile(migConfig, standInConfig(capture(MIG), [...(await migKeys('mig.conf')), ...(await migKeys('mig-gpm.conf'))]));
    // A kernel log without Xids (the recorded host's NVRM lines only), not this machine's.
    hosts.mig = await target('mig', [...nvmlArgs, '--host-root', join(FIXTURES, 'hosts/h200x2-healthy')], { NVML_STAND_IN: migConfig });

    const prometheus = await startPrometheus(dir, {
      global: { scrape_interval: '1s' },
      scrape_configs: [{ job_name: 'node', static_configs: [{ targets: Object.values(hosts) }] }],
    });
    stops.push(prometheus.stop);
    query = prometheus.query;
    labelValues = async (label, match) =>
      ((await prometheus.api(`label/${label}/values?match[]=${encodeURIComponent(match)}`)) as string[]).sort();
    // rate() and increase() need two samples of each target in their window.
    const ready = await eventually(
      async () => (await query('count_over_time(nvidia_smi_last_collect_success[1m]) >= 3').catch(() => [])).length === 3,
      90_000,
    );
    expect(ready, prometheus.log()).toBe(true);
  }, 150_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** The dashboard's variables filled as Grafana does for one host and GPU. */
  const filled = (expr: string, host: Host, gpu: string) =>
    expr.replaceAll('$job', 'node').replaceAll('$node', hosts[host]).replaceAll('$gpu', gpu).replaceAll('$__rate_interval', '1m');

  /** The gpu variable: its query_result, each series written as Grafana writes it, the regex picking text and value. */
  async function gpuVariable(host: Host): Promise<{ text: string; value: string }[]> {
    const series = await query(filled(VARIABLES.gpu.query, host, ''));
    const [, source, flags] = /^\/(.*)\/([a-z]*)$/.exec(VARIABLES.gpu.regex)!;
    return series.map(({ metric }) => {
      const { __name__, ...labels } = metric;
      const line = `${__name__}{${Object.entries(labels)
        .map(([k, v]) => `${k}="${v}"`)
        .join(', ')}}`;
      const found = [...line.matchAll(new RegExp(source!, flags))].map((m) => m.groups!);
      return { text: found.find((g) => g.text)!.text!, value: found.find((g) => g.value)!.value! };
    });
  }

  it("the variables: job, the three hosts as node, and each host's GPUs by uuid with 'name #index (uuid start)'", async () => {
    expect(await labelValues(VARIABLES.job.label, VARIABLES.job.match)).toEqual(['node']);
    expect(await labelValues(VARIABLES.node.label, VARIABLES.node.match.replace('$job', 'node'))).toEqual(Object.values(hosts).sort());
    expect(await gpuVariable('smi')).toEqual(
      expect.arrayContaining([
        { text: 'NVIDIA H200 #0 (d9041e44)', value: 'd9041e44-56fa-e7d7-44d1-12664904be3d' },
        { text: 'NVIDIA H200 #1 (697eaabb)', value: '697eaabb-1770-71c5-54ee-1d10ad7a70cb' },
      ]),
    );
    expect((await gpuVariable('smi')).length).toBe(2);
    expect(await gpuVariable('mig')).toEqual([{ text: 'NVIDIA H200 #0 (00000000)', value: '00000000-0000-0000-0000-000000000000' }]);
  });

  it.each(['smi', 'nvml', 'mig'] as const)(
    'every panel of both dashboards has data on the %s host but those listed, for each GPU',
    async (host) => {
      for (const { value: gpu } of await gpuVariable(host)) {
        const empty: string[] = [];
        for (const q of PANEL_QUERIES) if ((await query(filled(q.expr, host, gpu))).length === 0) empty.push(key(q));
        expect(empty.sort(), gpu).toEqual(Object.keys(NO_DATA[host]).sort());
      }
    },
  );

  it('the panels read the recording in the units they expect (ratios, bytes, hertz, watts, C)', async () => {
    const panel = async (dashboard: string, title: string, host: Host, gpu: string) =>
      (await query(filled(PANEL_QUERIES.find((q) => q.dashboard === dashboard && q.title === title)!.expr, host, gpu))).map((s) =>
        Number(s.value[1]),
      );
    const rec = (column: string) => recorded(capture(LOAD), column);
    const gpus = (await gpuVariable('smi')).map((g) => g.value).sort((a, b) => (a.startsWith('d9') ? -1 : b.startsWith('d9') ? 1 : 0));
    for (const host of ['smi', 'nvml'] as const)
      for (const [i, gpu] of gpus.entries()) {
        expect(await panel('14574', 'SM Clock Speed', host, gpu)).toEqual([rec('clocks.current.sm')[i]! * 1e6]);
        expect(await panel('14574', 'GPU Clock', host, gpu)).toEqual([rec('clocks.current.graphics')[i]! / rec('clocks.max.graphics')[i]!]);
        expect(await panel('14574', 'Temperature', host, gpu)).toEqual([rec('temperature.gpu')[i]]);
        expect(await panel('14574', 'Power', host, gpu)).toEqual([rec('power.draw')[i]! / rec('enforced.power.limit')[i]!]);
        expect(await panel('14574', 'Memory Alloc', host, gpu)).toEqual([rec('memory.used')[i]! / rec('memory.total')[i]!]);
        expect(await panel('25547', 'GPUs #2', host, gpu)).toEqual([rec('utilization.gpu')[i]! / 100]);
      }
    // The processes' memory in bytes: nvidia-smi's 3682 MiB (query-compute-apps.csv, GPU 0, pid 2006).
    expect(await panel('14574', 'Process Memory Over Time', 'smi', gpus[0]!)).toContain(3682 * 1048576);
    // Xid 79 once on GPU 0, Xid 13 twice on GPU 1 (the kernel log's records).
    expect(await panel('14574', 'XID Errors', 'smi', gpus[0]!)).toEqual([1]);
    expect(await panel('14574', 'XID Errors', 'smi', gpus[1]!)).toEqual([2]);
    // NVML's KB/s in bytes per second, as the peer converts it (x 1000).
    expect(await panel('25547', 'PCIe TX', 'nvml', gpus[0]!)).toEqual([PCIE_KB.tx * 1000]);
    // The MIG GPU instance 1 (3g.71gb): its memory (mig.conf) and GPM SM activity 97.5 % (mig-gpm.conf).
    const mig = (await gpuVariable('mig'))[0]!.value;
    const byInstance = async (title: string) =>
      Object.fromEntries(
        (await query(filled(PANEL_QUERIES.find((q) => q.dashboard === '14574' && q.title === title)!.expr, 'mig', mig))).map((s) => [
          `${s.metric.gpu_instance_id} ${s.metric.profile}`,
          Number(s.value[1]),
        ]),
      );
    expect((await byInstance('MIG Memory Used'))['1 3g.71gb']).toBe(14183038976);
    expect((await byInstance('MIG SM Activity'))['1 3g.71gb']).toBe(0.975);
  });
});
