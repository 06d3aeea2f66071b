import { describe, expect, it } from 'vitest';
import type { Collection, GpuSample, ProcessSample } from '../../src/collection.js';
import { FIELDS } from '../../src/fields/fields.js';
import { checkExposition } from '../../src/exposition/check.js';
import { render } from '../../src/exposition/render.js';
import { buildFamilies } from '../../src/metrics/metrics.js';
import { newLabelArrays } from '../../src/metrics/metrics-labels.js';
import { MAX_JOBS_PER_GPU } from '../../src/host/job.js';
import { metricCatalog } from '../../src/metrics/metrics-catalog.js';
import { jobFamilies } from '../../src/run/job-info.js';
import { expectFamilies } from '../support/families.js';

const MIB = 1024 * 1024;
const FIELDS_USED = FIELDS.filter((f) => ['index', 'uuid', 'utilization.gpu', 'power.draw'].includes(f.query));
const sample = (gpu: string): GpuSample => ({
  gpu,
  uuid: `GPU-${gpu}`,
  readings: new Map([['utilization.gpu', { kind: 'number', value: 0.5, shown: '50' }]]),
});
const collection = (gpus: string[], apps: ProcessSample[]): Collection => ({
  fields: FIELDS_USED,
  samples: gpus.map(sample),
  down: [],
  processes: { apps, dropped: 0, skipped: 0 },
  health: { durationSeconds: 0.1 },
});
const app = (gpu: string, pid: number, over: Partial<ProcessSample>): ProcessSample => ({
  uuid: `GPU-${gpu}`,
  pid,
  name: 'python3',
  user: 'alice',
  memoryBytes: 1000 * MIB,
  ...over,
});

describe('nvidia_gpu_holder_info', () => {
  // run's textfile sits beside collect's in node_exporter's directory: one name with two HELP texts
  // or label sets across files is an error there (nvidia_gpu_job_info is run's, for the job it started).
  it('shares no family name with what `run` writes beside it', () => {
    const runs = jobFamilies({ task: 't', pid: 1, command: 'c', startedAtSeconds: 0 }, [{ gpu: '0', uuid: 'GPU-0' }]).map((f) => f.name);
    expect(runs).toContain('nvidia_gpu_job_info');
    expect(metricCatalog().filter((f) => runs.includes(f.name))).toEqual([]);
  });

  it('one series per job per GPU, labelled with the job and joined on gpu and uuid; no GPU series carries a job label', () => {
    const families = buildFamilies(
      collection(
        ['0', '1', '2'],
        [
          app('0', 10, { attribution: { slurm_job: '4242' } }),
          app('0', 11, { attribution: { slurm_job: '4242' } }),
          app('1', 12, { attribution: { slurm_job: '4242' } }),
          app('1', 13, { user: 'bob', attribution: { container_id: `${'ab'.repeat(32)}` }, memoryBytes: 10 * MIB }),
        ],
      ),
    );
    expectFamilies(families, {
      nvidia_gpu_holder_info: [
        { labels: { gpu: '0', uuid: 'GPU-0', job_kind: 'slurm', job_id: '4242', user: 'alice' }, value: 1 },
        { labels: { gpu: '1', uuid: 'GPU-1', job_kind: 'slurm', job_id: '4242', user: 'alice' }, value: 1 },
        { labels: { gpu: '1', uuid: 'GPU-1', job_kind: 'container', job_id: 'abababababab', user: 'bob' }, value: 1 },
      ],
      nvidia_gpu_holders: [
        { labels: { gpu: '0', uuid: 'GPU-0' }, value: 1 },
        { labels: { gpu: '1', uuid: 'GPU-1' }, value: 2 },
        { labels: { gpu: '2', uuid: 'GPU-2' }, value: 0 },
      ],
      nvidia_gpu_utilization_ratio: ['0', '1', '2'].map((gpu) => ({ labels: { gpu, uuid: `GPU-${gpu}` }, value: 0.5 })),
    });
  });

  it(`cardinality: 200 short jobs a day on 8 GPUs, each scrape carries at most ${MAX_JOBS_PER_GPU} job series per GPU`, () => {
    const gpus = ['0', '1', '2', '3', '4', '5', '6', '7'];
    const arrays = newLabelArrays();
    let most = 0;
    // A day at one scrape a minute; job j runs for 30 minutes from minute 7j on GPU j % 8, so up to
    // 5 run at once (on different GPUs), and a burst at noon puts 40 more on GPU 0 at once.
    for (let minute = 0; minute < 1440; minute++) {
      const apps: ProcessSample[] = [];
      for (let j = 0; j < 200; j++)
        if (minute >= 7 * j && minute < 7 * j + 30) apps.push(app(String(j % 8), 1000 + j, { attribution: { slurm_job: String(j) } }));
      if (minute === 720) for (let k = 0; k < 40; k++) apps.push(app('0', 5000 + k, { attribution: { slurm_job: String(9000 + k) } }));
      const families = buildFamilies(collection(gpus, apps), [], arrays);
      const info = families.find((f) => f.name === 'nvidia_gpu_holder_info')!.samples;
      const counts = families.find((f) => f.name === 'nvidia_gpu_holders')!.samples;
      for (const gpu of gpus)
        expect(info.filter((s) => s.labels.some(([k, v]) => k === 'gpu' && v === gpu)).length).toBeLessThanOrEqual(MAX_JOBS_PER_GPU);
      most = Math.max(most, info.length);
      if (minute === 720) {
        expect(counts.find((s) => s.labels.some(([k, v]) => k === 'gpu' && v === '0'))!.value).toBe(40);
        expect(info.length).toBe(MAX_JOBS_PER_GPU + 4);
      }
    }
    expect(most).toBeLessThanOrEqual(gpus.length * MAX_JOBS_PER_GPU);
    expect(most).toBe(MAX_JOBS_PER_GPU + 4);
  });
});

describe('nvidia_gpu_holder_info: ids cut inside a character', () => {
  it('two commands that differ past the 64-character cut in an emoji are one job, not two series the file writes alike', () => {
    // Cut at 64 UTF-16 units, each name kept half of its emoji (a lone surrogate, a different one for
    // each): two label values in memory, one in the file (both U+FFFD in UTF-8), so a duplicate
    // series, and node_exporter refuses the whole file.
    const stem = 'x'.repeat(63);
    const text = render(
      buildFamilies(collection(['0'], [app('0', 1, { name: `/opt/${stem}\u{1F600}` }), app('0', 2, { name: `/opt/${stem}\u{1F900}` })])),
    );
    const written = Buffer.from(text, 'utf8').toString('utf8');
    expect(checkExposition(written).problems).toEqual([]);
    const holders = checkExposition(written).samples.filter((s) => s.name === 'nvidia_gpu_holder_info');
    expect(holders.map((s) => s.labels.job_id)).toEqual([stem]);
  });
});
