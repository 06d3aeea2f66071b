import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { historyFiles } from '../../src/csvlog/read.js';
import { exportText, newExportTally, type ExportPlan } from '../../src/export/export.js';
import { generateRows, HEADER } from '../../src/report/history-generator.js';
import { tempDir } from '../support/helpers.js';

// exportText over a generated trail, checked against the trail's own rows read here with a split
// (the generator writes no quoted cell): every family once and whole, a sample per ok row and GPU,
// the health of every collection, and the rows a plan leaves out.

const START = Date.UTC(2026, 0, 5);
const MINUTE = 60_000;
const UUID0 = 'GPU-00000000-1111-2222-3333-444444444440';

/** Two GPUs for two hours at 60 s: a gap (both GPUs) at 0:30, a failed collection at 1:00, gpu 0 held by a Slurm job. */
const trailRows = (host = 'h1', task = 'train') =>
  generateRows({
    start: START,
    hours: 2,
    intervalSeconds: 60,
    host,
    task,
    gpus: ['training', 'idleWithMemory'],
    skip: (_gpu, h) => h >= 0.5 && h < 0.6,
    fail: (_gpu, h) => (h >= 1 && h < 1.1 ? 'nvidia_smi_failed' : undefined),
    jobs: (gpu) => (gpu === 0 ? 'slurm:4242:alice:60000:90' : '-'),
  });

async function writeTrail(rows: string[], task = 'train'): Promise<string> {
  const dir = await tempDir('gpu-textfile-export-');
  await writeFile(join(dir, `${task}.csv`), `${HEADER},jobs\n${rows.join('\n')}\n`);
  return dir;
}

async function exported(dir: string, plan: Partial<ExportPlan> = {}) {
  const tally = newExportTally();
  const pieces: string[] = [];
  const full: ExportPlan = {
    files: await historyFiles(dir),
    format: 'openmetrics',
    until: Date.UTC(2030, 0, 1),
    hostLabel: 'instance',
    labels: [],
    ...plan,
  };
  for await (const piece of exportText(full, tally)) pieces.push(piece);
  return { text: pieces.join(''), tally };
}

/** The sample lines of `name`, split: labels (as text), value, timestamp. */
const samplesOf = (text: string, name: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => {
      const match = /^[a-z_]+(\{.*\})? (\S+) (\S+)$/.exec(line)!;
      return { labels: match[1] ?? '', value: Number(match[2]), time: Number(match[3]) };
    });

const cells = (row: string) => row.split(',');
const ok = (rows: string[]) => rows.filter((row) => cells(row)[6] === 'ok');

describe('export: the trail as OpenMetrics', () => {
  it('writes each family once, its samples together, in the textfile names, and ends in # EOF', async () => {
    const { text } = await exported(await writeTrail(trailRows()));
    const lines = text.split('\n');
    expect(lines.at(-1)).toBe('');
    expect(lines.at(-2)).toBe('# EOF');
    const families = lines.filter((line) => line.startsWith('# TYPE ')).map((line) => line.split(' ')[2]);
    expect(families).toEqual([
      'nvidia_gpu_up',
      'nvidia_gpu_utilization_ratio',
      'nvidia_gpu_memory_used_bytes',
      'nvidia_gpu_memory_total_bytes',
      'nvidia_gpu_power_draw_watts',
      'nvidia_gpu_temperature_celsius',
      'nvidia_gpu_holder_info',
      'nvidia_gpu_holders',
      'nvidia_gpu_collector_success',
      'nvidia_gpu_collector_error',
    ]);
    // Contiguous: the name of each sample line is the family of the TYPE line above it.
    let family = '';
    for (const line of lines.slice(0, -2)) {
      if (line.startsWith('# TYPE ')) family = line.split(' ')[2]!;
      else if (!line.startsWith('# HELP ')) expect(line.split(/[{ ]/)[0]).toBe(family);
    }
  });

  it('has a sample for every ok row of each GPU, in base units, at the row time in seconds', async () => {
    const rows = trailRows();
    const { text, tally } = await exported(await writeTrail(rows));
    const utilization = samplesOf(text, 'nvidia_gpu_utilization_ratio');
    expect(utilization).toHaveLength(ok(rows).length);
    const first = cells(ok(rows)[0]!);
    expect(utilization[0]).toEqual({
      labels: `{instance="h1",task="train",gpu="0",uuid="${UUID0}"}`,
      value: Number(first[7]) / 100,
      time: Date.parse(first[0]!) / 1000,
    });
    const memory = samplesOf(text, 'nvidia_gpu_memory_used_bytes');
    expect(memory.map((s) => s.value)).toEqual(ok(rows).map((row) => Number(cells(row)[8]) * 1024 * 1024));
    expect(samplesOf(text, 'nvidia_gpu_power_draw_watts').map((s) => s.value)).toEqual(ok(rows).map((row) => Number(cells(row)[10])));
    expect(tally.rows).toBe(rows.length);
  });

  it('keeps every collection health: success 0 with its reason for a failed one, and the gap has no sample at all', async () => {
    const rows = trailRows();
    const { text } = await exported(await writeTrail(rows));
    const times = [...new Set(rows.map((row) => cells(row)[0]))];
    const failedTimes = [...new Set(rows.filter((row) => cells(row)[6] !== 'ok').map((row) => Date.parse(cells(row)[0]!) / 1000))];
    expect(failedTimes).toHaveLength(6);
    const success = samplesOf(text, 'nvidia_gpu_collector_success');
    expect(success).toHaveLength(times.length);
    expect(success.filter((s) => s.value === 0).map((s) => s.time)).toEqual(failedTimes);
    expect(success.every((s) => s.labels === '{instance="h1",task="train"}')).toBe(true);
    const errors = samplesOf(text, 'nvidia_gpu_collector_error');
    expect(errors.map((s) => s.time)).toEqual(failedTimes);
    expect(new Set(errors.map((s) => s.labels))).toEqual(new Set(['{instance="h1",task="train",reason="nvidia_smi_failed"}']));
    // 120 minutes, 6 of them skipped: the gap stays a gap.
    expect(times).toHaveLength(114);
    // A failed collection has no nvidia_gpu_up, as its textfile has none.
    expect(samplesOf(text, 'nvidia_gpu_up')).toHaveLength(ok(rows).length);
  });

  it('names the jobs of the jobs column: holder_info per job and GPU, holders counting them', async () => {
    const rows = trailRows();
    const { text } = await exported(await writeTrail(rows));
    const info = samplesOf(text, 'nvidia_gpu_holder_info');
    expect(new Set(info.map((s) => s.labels))).toEqual(
      new Set([`{instance="h1",task="train",gpu="0",uuid="${UUID0}",job_kind="slurm",job_id="4242",user="alice"}`]),
    );
    expect(info).toHaveLength(ok(rows).filter((row) => cells(row)[3] === '0').length);
    const holders = samplesOf(text, 'nvidia_gpu_holders');
    expect(holders.filter((s) => s.value === 1)).toHaveLength(info.length);
    expect(holders.filter((s) => s.value === 0)).toHaveLength(ok(rows).filter((row) => cells(row)[3] === '1').length);
  });

  it('names who reserved each GPU where the reserved column says: reservation_info per job and GPU, the count, the unreadable jobs', async () => {
    // GPU 0 reserved by the job running on it; GPU 1 by another that runs nothing, and one job on
    // the host whose reservation could not be read (`?1`, on every GPU's row).
    const rows = generateRows({
      start: START,
      hours: 1,
      intervalSeconds: 60,
      host: 'h1',
      task: 'train',
      gpus: ['training', 'idleWithMemory'],
      jobs: (gpu) => (gpu === 0 ? 'slurm:4242:alice:60000:90' : '-'),
      reserved: (gpu, h) => (h >= 0.5 ? '' : gpu === 0 ? 'slurm:4242:alice ?1' : 'slurm:4243:bob ?1'),
    });
    const dir = await tempDir('gpu-textfile-export-');
    await writeFile(join(dir, 'train.csv'), `${HEADER},jobs,reserved\n${rows.join('\n')}\n`);
    const { text } = await exported(dir);
    // The second half hour's cells are empty (not read): no reservation series there.
    const read = rows.filter((row) => Date.parse(cells(row)[0]!) < START + 30 * MINUTE);
    const info = samplesOf(text, 'nvidia_gpu_reservation_info');
    expect(new Set(info.map((s) => s.labels))).toEqual(
      new Set([
        `{instance="h1",task="train",gpu="0",uuid="${UUID0}",job_kind="slurm",job_id="4242",user="alice"}`,
        `{instance="h1",task="train",gpu="1",uuid="GPU-00000001-1111-2222-3333-444444444441",job_kind="slurm",job_id="4243",user="bob"}`,
      ]),
    );
    expect(info).toHaveLength(read.length);
    expect(info.every((s) => s.time < (START + 30 * MINUTE) / 1000)).toBe(true);
    const counts = samplesOf(text, 'nvidia_gpu_reservations');
    expect(counts.map((s) => s.value)).toEqual(read.map(() => 1));
    const unknown = samplesOf(text, 'nvidia_gpu_reservation_unknown_jobs');
    expect(unknown.map((s) => [s.labels, s.value])).toEqual(
      read.filter((row) => cells(row)[3] === '0').map(() => ['{instance="h1",task="train"}', 1]),
    );
  });

  it('takes rows from --since to --until, of the host and task asked, under the labels asked', async () => {
    const rows = trailRows();
    const dir = await writeTrail(rows);
    const since = START + 10 * MINUTE;
    const until = START + 20 * MINUTE;
    const { text } = await exported(dir, { since, until, hostLabel: 'host', labels: [['job', 'node']] });
    const times = samplesOf(text, 'nvidia_gpu_collector_success').map((s) => s.time * 1000);
    const expected = [...new Set(rows.map((row) => Date.parse(cells(row)[0]!)))].filter((t) => t >= since && t < until);
    expect(times).toEqual(expected);
    expect(samplesOf(text, 'nvidia_gpu_collector_success')[0]!.labels).toBe('{job="node",host="h1",task="train"}');
    expect((await exported(dir, { host: 'h2' })).tally.rows).toBe(0);
    expect((await exported(dir, { task: 'other' })).tally.rows).toBe(0);
    expect((await exported(dir, { host: 'h1', task: 'train' })).tally.rows).toBe(rows.length);
  });

  it('an empty selection is still a whole OpenMetrics text: # EOF alone', async () => {
    const { text } = await exported(await writeTrail(trailRows()), { host: 'nobody' });
    expect(text).toBe('# EOF\n');
  });

  it('leaves out collections not after the last one of their host and task: a store refuses them', async () => {
    const rows = trailRows();
    // The clock set back ten minutes and a second at 1:30: the rows then repeat earlier times (a
    // second more than ten minutes, so that the generator's jitter of a few ms cannot decide).
    const stepped = rows.map((row) => {
      const time = Date.parse(cells(row)[0]!);
      if (time < START + 90 * MINUTE) return row;
      return [new Date(time - 10 * MINUTE - 1000).toISOString().replace('Z', '+00:00'), ...cells(row).slice(1)].join(',');
    });
    const { text, tally } = await exported(await writeTrail(stepped));
    const times = samplesOf(text, 'nvidia_gpu_collector_success').map((s) => s.time);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(new Set(times).size).toBe(times.length);
    // Collections at 1:30 to 1:39 are stamped 1:19:59 to 1:28:59, before 1:29: ten left out.
    expect(tally.outOfOrder).toBe(10);
  });
});

describe('export: the Prometheus text format', () => {
  it('has timestamps in milliseconds and no # EOF', async () => {
    const rows = trailRows();
    const { text } = await exported(await writeTrail(rows), { format: 'prometheus' });
    expect(text).not.toContain('# EOF');
    expect(samplesOf(text, 'nvidia_gpu_collector_success')[0]!.time).toBe(Date.parse(cells(rows[0]!)[0]!));
  });
});
