import { mkdir, rm, writeFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { capture, eventually, FAKE_SMI, runCli } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { startPrometheus, type PromSample as Sample } from '../support/prometheus.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';
import { recorded } from './recording.js';

// dcgm-exporter's Grafana dashboard (grafana.com 12239) against our --compat dcgm file: a real
// Prometheus scraping a real node_exporter per source. The panels' expressions and the two variables
// are taken as facts (what each panel asks), not copied from the dashboard's file.

const LOAD = 'h200x2__580.159.04__linux-load';
/** GPM's tensor activity the NVML stand-in answers, in % (NVML's unit; GPM metric id 5). */
const TENSOR_PERCENT = [42, 17];
/** GPU 0's energy counter the NVML stand-in answers, in mJ (NVML's unit). */
const ENERGY_MJ = 987_654_321;

/** The 8 panels: title -> expression, with $instance and $gpu as the dashboard's variables. */
const PANELS: Record<string, string> = {
  'GPU Temperature': 'DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"}',
  'GPU Avg. Temp': 'avg(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"})',
  'GPU Power Usage': 'DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"}',
  'GPU Power Total': 'sum(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"})',
  'GPU SM Clocks': 'DCGM_FI_DEV_SM_CLOCK{instance=~"$instance", gpu=~"$gpu"} * 1000000',
  'GPU Utilization': 'DCGM_FI_DEV_GPU_UTIL{instance=~"$instance", gpu=~"$gpu"}',
  'Tensor Core Utilization': 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance=~"$instance", gpu=~"$gpu"}',
  'GPU Framebuffer Mem Used': 'DCGM_FI_DEV_FB_USED{instance=~"$instance", gpu=~"$gpu"}',
};

describe('dashboard 12239 (dcgm-exporter) on the --compat dcgm file', () => {
  let dir = '';
  const stops: (() => Promise<void>)[] = [];
  let smi = '';
  let nvml = '';
  let query: (expr: string) => Promise<Sample[]>;
  let labelValues: (label: string) => Promise<string[]>;

  /** One node_exporter serving a textfile directory that `collect --compat dcgm` filled once: its host:port. */
  async function target(name: string, args: string[], env: Record<string, string>): Promise<string> {
    const textfile = join(dir, name);
    await mkdir(textfile);
    const result = await runCli(
      ['collect', '--compat', 'dcgm', '--textfile-dir', textfile, '--state-dir', join(dir, `${name}-state`), ...args],
      env,
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const exporter = await startNodeExporter(textfile);
    stops.push(exporter.stop);
    return new URL(exporter.url).host;
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-12239-'));
    smi = await target('smi', ['--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: capture(LOAD) });
    const config = join(dir, 'stand-in.conf');
    const gpm = [...TENSOR_PERCENT.flatMap((percent, gpu) => [`${gpu}.gpm=1`, `${gpu}.gpm.5=${percent}`]), `0.energy_mj=${ENERGY_MJ}`];
    await writeFile(config, standInConfig(capture(LOAD), gpm));
    nvml = await target('nvml', ['--source', 'nvml', '--nvml-library', standInLibrary(), '--gpm-window', '20ms'], {
      NVML_STAND_IN: config,
    });

    const prometheus = await startPrometheus(dir, {
      global: { scrape_interval: '1s' },
      scrape_configs: [{ job_name: 'node', static_configs: [{ targets: [smi, nvml] }] }],
    });
    stops.push(prometheus.stop);
    query = prometheus.query;
    // The variables: label_values(DCGM_FI_DEV_GPU_TEMP, instance) and label_values(DCGM_FI_DEV_GPU_TEMP, gpu).
    labelValues = async (label) => ((await prometheus.api(`label/${label}/values?match[]=DCGM_FI_DEV_GPU_TEMP`)) as string[]).sort();
    const ready = await eventually(async () => (await query('DCGM_FI_DEV_GPU_TEMP').catch(() => [])).length === 4, 90_000);
    expect(ready, prometheus.log()).toBe(true);
  }, 150_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const panelsWithData = async (instance: string, gpu = '.*') => {
    const shown: string[] = [];
    for (const [title, expr] of Object.entries(PANELS))
      if ((await query(expr.replaceAll('$instance', instance).replaceAll('$gpu', gpu))).length > 0) shown.push(title);
    return shown;
  };

  it('the variables list both node_exporter targets as instance, and the GPUs', async () => {
    expect(await labelValues('instance')).toEqual([nvml, smi].sort());
    expect(await labelValues('gpu')).toEqual(['0', '1']);
  });

  it('7 of 8 panels show data through nvidia-smi (no tensor activity: it has no GPM), 8 of 8 through NVML with GPM', async () => {
    expect(await panelsWithData(smi)).toEqual(Object.keys(PANELS).filter((title) => title !== 'Tensor Core Utilization'));
    expect(await panelsWithData(nvml)).toEqual(Object.keys(PANELS));
  });

  it('the panels read the recording in the units they expect, filtered by instance and gpu', async () => {
    const one = async (title: string, instance: string, gpu: string) =>
      (await query(PANELS[title]!.replaceAll('$instance', instance).replaceAll('$gpu', gpu))).map((s) => Number(s.value[1]));
    for (const instance of [smi, nvml])
      for (const gpu of [0, 1]) {
        expect(await one('GPU SM Clocks', instance, String(gpu))).toEqual([recorded(capture(LOAD), 'clocks.current.sm')[gpu]! * 1e6]);
        expect(await one('GPU Temperature', instance, String(gpu))).toEqual([recorded(capture(LOAD), 'temperature.gpu')[gpu]]);
        expect(await one('GPU Utilization', instance, String(gpu))).toEqual([recorded(capture(LOAD), 'utilization.gpu')[gpu]]);
        expect(await one('GPU Framebuffer Mem Used', instance, String(gpu))).toEqual([recorded(capture(LOAD), 'memory.used')[gpu]]);
      }
    const [total] = await one('GPU Power Total', smi, '.*');
    expect(total).toBeCloseTo(
      recorded(capture(LOAD), 'power.draw').reduce((a, b) => a + b, 0),
      9,
    );
    for (const [gpu, percent] of TENSOR_PERCENT.entries())
      expect(await one('Tensor Core Utilization', nvml, String(gpu))).toEqual([percent / 100]);
    // Not a panel, but dcgm-exporter's default counter: NVML's mJ, unchanged by the trip through joules.
    expect((await query(`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{instance="${nvml}", gpu="0"}`)).map((s) => Number(s.value[1]))).toEqual([
      ENERGY_MJ,
    ]);
    expect(await query(`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{instance="${smi}"}`)).toEqual([]);
  });
});
