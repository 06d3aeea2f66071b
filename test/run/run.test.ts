import { chmod, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, FAKE_SMI, capture, cliEnv, runCli, tempDir, madeDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// `gpu-textfile run -- CMD` end to end: the built CLI, the stand-in nvidia-smi replaying two H200s
// (GPU 0 draws 118.73 W, GPU 1 78.12 W), and small shell jobs. A job that must outlive a sample
// waits for the wrapper's own output (a CSV row, the textfile) with a generous deadline, never a fixed time.

const H200X2 = capture('h200x2__580.159.04__linux-load');

/** Writes an executable job script into `dir`. */
async function job(dir: string, name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
}

/** Shell that waits (up to 30 s) until the shell condition holds. */
const waitUntil = (condition: string) => `i=0; while [ $i -lt 600 ] && ! { ${condition}; } 2>/dev/null; do sleep 0.05; i=$((i+1)); done`;
/** Shell that waits (up to 30 s) until `grep -q PATTERN FILE` holds. */
const waitFor = (pattern: string, file: string) => waitUntil(`grep -q -e '${pattern}' "${file}"`);

/** Starts `gpu-textfile run` with the stand-in, the host root and state in `dir`; never rejects. */
function wrap(dir: string, args: string[], command: string[], env: Record<string, string> = {}) {
  return execa(
    process.execPath,
    [CLI, 'run', '--nvidia-smi', FAKE_SMI, '--host-root', join(dir, 'host'), '--state-dir', join(dir, 'state'), ...args, '--', ...command],
    {
      env: cliEnv({ FAKE_SMI_CAPTURE: H200X2, ...env }),
      extendEnv: false,
      reject: false,
      timeout: 60_000,
      stdin: 'ignore',
      encoding: 'buffer',
      stripFinalNewline: false,
    },
  );
}

/** Output captured as bytes, read as UTF-8. */
const text = (bytes: unknown) => Buffer.from(bytes as Uint8Array).toString('utf8');

const csvOf = async (path: string) =>
  (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => line.split(','));

describe('gpu-textfile run', () => {
  // A job's textfile in a mistyped directory would be read by nothing: refused before the job starts.
  it('a --textfile-dir that does not exist: exit 2, one line naming it, the job not started, nothing written', async () => {
    const dir = await tempDir();
    const script = await job(dir, 'train.sh', `touch "${dir}/started"`);
    const missing = join(dir, 'textfil');
    const result = await wrap(
      dir,
      ['--textfile-dir', missing, '--csv-dir', join(dir, 'csv'), '--summary-json', join(dir, 's.json')],
      [script],
    );
    expect({ exit: result.exitCode, stdout: text(result.stdout), stderr: text(result.stderr) }).toEqual({
      exit: 2,
      stdout: '',
      stderr: `gpu-textfile: --textfile-dir: ${missing} does not exist (a mistyped one would never be read); give node_exporter's --collector.textfile.directory, create it, or run gpu-textfile install\n`,
    });
    expect(await readdir(dir)).toEqual(['train.sh']);
  });

  it("passes the job's output and exit status through; CSV rows carry step and marks; report reads them", async () => {
    const dir = await tempDir();
    const csv = join(dir, 'csv/t1.csv');
    const script = await job(
      dir,
      'train.sh',
      `echo "step 1 loss=0.5"\necho warn >&2\necho "step 2 loss=0.4"\n${waitFor(',2,loss=0.4$', csv)}\necho "[3/3] loss=0.3"\nexit 3`,
    );
    const result = await wrap(
      dir,
      ['--task', 't1', '--csv-dir', join(dir, 'csv'), '--interval', '200ms', '--summary-json', join(dir, 's.json')],
      [script],
    );
    expect(result.exitCode).toBe(3);
    expect(text(result.stdout)).toBe('step 1 loss=0.5\nstep 2 loss=0.4\n[3/3] loss=0.3\n');
    expect(text(result.stderr)).toMatch(/^warn\ngpu-textfile run: t1: exit status 3 after /);
    const [header, ...rows] = await csvOf(csv);
    expect(header!.slice(-2)).toEqual(['step', 'marks']);
    expect(rows.some((row) => row.slice(-2).join() === '2,loss=0.4')).toBe(true);
    // Without CUDA_VISIBLE_DEVICES and with none of the job's processes on a GPU: all GPUs.
    expect(new Set(rows.map((row) => row[3]))).toEqual(new Set(['0', '1']));
    const summary = JSON.parse(await readFile(join(dir, 's.json'), 'utf8'));
    expect(summary).toMatchObject({ task: 't1', exit_status: 3, exit_code: 3, selection: 'all', command: [script] });
    expect(summary.gpus.map((g: { gpu: string }) => g.gpu)).toEqual(['0', '1']);
    expect(summary.steps).toMatchObject({ lines: 3, done: 2, last_step: 3 });

    const report = await runCli(['report', '--csv-dir', join(dir, 'csv'), '--by', 'gpu', '--format', 'json']);
    expect(report.exitCode).toBe(0);
    const answer = JSON.parse(report.stdout);
    expect(answer.odd_rows.count).toBe(0);
    expect(answer.rows_read).toBe(rows.length);
    expect(answer.rows.map((row: { task_id: string; gpu_id: string }) => `${row.task_id}/${row.gpu_id}`)).toEqual(['t1/0', 't1/1']);
    // docs/csv.md's sqlite3 recipe: the two columns more are two more columns to query.
    const sqlite = await execa(
      'sqlite3',
      [
        ':memory:',
        '-cmd',
        '.mode csv',
        `.import ${csv} samples`,
        "SELECT DISTINCT step, marks FROM samples WHERE status='ok' AND step='2'",
      ],
      { reject: false },
    );
    expect([sqlite.exitCode, sqlite.stdout, sqlite.stderr]).toEqual([0, '2,loss=0.4', '']);
  });

  it.each([
    ['an index', '1'],
    ['a UUID prefix', 'GPU-697eaabb'],
  ])('samples only the GPUs CUDA_VISIBLE_DEVICES names (%s)', async (_, visible) => {
    const dir = await tempDir();
    const csv = join(dir, 'csv/t2.csv');
    const script = await job(dir, 'train.sh', `echo "step 1"\n${waitFor(',1,$', csv)}`);
    const result = await wrap(dir, ['--task', 't2', '--csv-dir', join(dir, 'csv'), '--summary-json', join(dir, 's.json')], [script], {
      CUDA_VISIBLE_DEVICES: visible,
    });
    expect(result.exitCode).toBe(0);
    const [header, ...rows] = await csvOf(csv);
    const power = header!.indexOf('power_draw_w');
    expect(rows.map((row) => `${row[3]} ${row[power]}`)).toEqual(rows.map(() => '1 78.12'));
    const summary = JSON.parse(await readFile(join(dir, 's.json'), 'utf8'));
    expect([summary.selection, summary.gpus.map((g: { uuid: string }) => g.uuid)]).toEqual([
      'CUDA_VISIBLE_DEVICES',
      ['GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb'],
    ]);
    expect(text(result.stderr)).toContain('  GPUs            1 (by CUDA_VISIBLE_DEVICES)');
  });

  it("samples the GPUs where the job's process tree holds memory", async () => {
    const dir = await tempDir();
    const csv = join(dir, 'csv/t3.csv');
    // pid 2006 holds memory on GPU 0 only in the capture's process list: the job makes it its own
    // child in the host root's proc, then waits until the last two rows are GPU 0's alone.
    const script = await job(
      dir,
      'train.sh',
      [
        `mkdir -p "${dir}/host/proc/2006"`,
        `echo "2006 (python3) S $$ 2006 2006 0 -1" > "${dir}/host/proc/2006/stat"`,
        'echo step 1',
        waitUntil(`[ "$(tail -n 2 "${csv}" | grep -c ',0,GPU-d9041e44')" = 2 ]`),
      ].join('\n'),
    );
    const result = await wrap(dir, ['--task', 't3', '--csv-dir', join(dir, 'csv'), '--summary-json', join(dir, 's.json')], [script]);
    expect(result.exitCode).toBe(0);
    const summary = JSON.parse(await readFile(join(dir, 's.json'), 'utf8'));
    expect([summary.selection, summary.gpus.map((g: { gpu: string }) => g.gpu)]).toEqual(['process tree', ['0']]);
    const rows = (await csvOf(csv)).slice(1);
    expect(rows[rows.length - 1]![3]).toBe('0');
  });

  it('publishes the job into the textfile while it runs (promtool accepts it), and removes it when the job ends', async () => {
    const dir = await tempDir();
    const file = join(dir, 'textfile/gpu-textfile-run-t4.prom');
    // The job copies the file once it names the job, then ends; the test reads the copy.
    const script = await job(
      dir,
      'train.sh',
      [`echo $$ > "${dir}/pid"`, waitFor('^nvidia_gpu_job_info', file), `cp "${file}" "${dir}/seen.prom"`].join('\n'),
    );
    const result = await wrap(dir, ['--task', 't4', '--textfile-dir', madeDir(join(dir, 'textfile'))], [script], {
      CUDA_VISIBLE_DEVICES: '0',
    });
    expect(result.exitCode).toBe(0);
    const seen = await readFile(join(dir, 'seen.prom'), 'utf8');
    const pid = (await readFile(join(dir, 'pid'), 'utf8')).trim();
    const promtool = await execa('promtool', ['check', 'metrics'], { input: seen, reject: false });
    expect([promtool.exitCode, promtool.stderr]).toEqual([0, '']);
    expect(seen).toContain(
      `nvidia_gpu_job_info{task="t4",pid="${pid}",command="train.sh",gpu="0",uuid="GPU-d9041e44-56fa-e7d7-44d1-12664904be3d"} 1\n`,
    );
    expect(seen).toMatch(new RegExp(`^nvidia_gpu_job_start_time_seconds\\{task="t4",pid="${pid}"\\} \\d+$`, 'm'));
    // The job's GPU only, every series labelled with its task: no clash with collect's own file.
    expect(seen).toMatch(/^nvidia_gpu_power_draw_watts\{task="t4",gpu="0",uuid="GPU-d9041e44-56fa-e7d7-44d1-12664904be3d"\} 118.73$/m);
    expect(seen).not.toContain('gpu="1"');
    await expect(readFile(file)).rejects.toThrow(/ENOENT/);
  });

  it('--source nvml: sampled through the NVML library (the stand-in) by a reader process; GPM keeps busy-but-idle SMs from being called saturated', async () => {
    const dir = await tempDir();
    const csv = join(dir, 'csv/t6.csv');
    const config = join(dir, 'stand-in.conf');
    // Both GPUs read 100 % utilization at 600 W (busy by every nvidia-smi field); GPM has GPU 0's SMs
    // active 2 % of the time (copies), GPU 1's 95 %: only GPM tells them apart.
    const busy = ['0.util_gpu=100', '1.util_gpu=100', '0.power_mw=600000', '1.power_mw=600000'];
    const gpm = [...busy, '0.gpm=1', '0.gpm.2=2', '1.gpm=1', '1.gpm.2=95'];
    await writeFile(config, standInConfig(H200X2, gpm));
    const script = await job(dir, 'train.sh', ['echo step 1', waitUntil(`[ "$(grep -c ',GPU-' "${csv}")" -ge 14 ]`)].join('\n'));
    const options = ['--source', 'nvml', '--nvml-library', standInLibrary(), '--interval', '100ms', '--task', 't6'];
    const result = await wrap(dir, [...options, '--csv-dir', join(dir, 'csv'), '--summary-json', join(dir, 's.json')], [script], {
      NVML_STAND_IN: config,
    });
    expect([result.exitCode, text(result.stderr)]).toEqual([0, expect.stringContaining('gpu-textfile run: t6: exit status 0')]);
    const summary = JSON.parse(await readFile(join(dir, 's.json'), 'utf8'));
    // The capture nvidia-smi replays says 0 % on both: these samples came through NVML.
    expect([summary.no_gpu_data, summary.utilization_mean]).toEqual([undefined, 100]);
    expect(summary.gpus.map((g: { gpu: string; verdict: string }) => [g.gpu, g.verdict])).toEqual([
      ['0', 'copies_or_tiny_kernels'],
      ['1', 'saturated'],
    ]);
  });

  it('a reader that goes away (| head -1): the job sees the broken pipe, as without the wrapper', async () => {
    const dir = await tempDir();
    const result = await execa(
      'sh',
      ['-c', `"${process.execPath}" "${CLI}" run --nvidia-smi "${FAKE_SMI}" --state-dir "${dir}/s" -- yes | head -n 1`],
      { env: cliEnv({ FAKE_SMI_CAPTURE: H200X2 }), extendEnv: false, reject: false, timeout: 60_000 },
    );
    expect(result.stdout.split('\n')[0]).toBe('y');
    // yes is killed by SIGPIPE (13): the wrapper exits 128 + 13.
    expect(result.stderr).toMatch(/gpu-textfile run: yes-\d{8}T\d{6}: killed by SIGPIPE \(status 141\)/);
  });
});
