import { existsSync } from 'node:fs';
import { cp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { ATTRIBUTED, attributionHost } from '../support/attribution-host.js';
import { CLI, FAKE_BIN, FAKE_SMI, FIXTURES, capture, cliEnv, eventually, madeDir, runCli, tempDir } from '../support/helpers.js';

const H200 = capture('h200x2__580.159.04__linux-idle');

async function dirs() {
  const root = await tempDir();
  return { textfile: madeDir(join(root, 'textfile')), state: join(root, 'state'), csv: join(root, 'csv'), root };
}

const collectArgs = (d: { textfile: string; state: string }, smi = FAKE_SMI, ...more: string[]) => [
  'collect',
  '--textfile-dir',
  d.textfile,
  '--state-dir',
  d.state,
  '--nvidia-smi',
  smi,
  ...more,
];

const familiesIn = (text: string) => new Set(checkExposition(text).samples.map((s) => s.name));
const GPU_SERIES = /^nvidia_gpu_(?!collector_)/;

describe('gpu-textfile collect', () => {
  // A mistyped --textfile-dir would be written on for ever where node_exporter never reads: refused
  // before anything runs. The nvidia-smi given would leave a mark if it were called.
  it('a --textfile-dir that does not exist: exit 2, one line naming it, nothing called or written', async () => {
    const root = await tempDir();
    const smi = join(root, 'nvidia-smi');
    await writeFile(smi, `#!/bin/sh\ntouch "${join(root, 'called')}"\n`, { mode: 0o755 });
    const missing = join(root, 'textfil');
    for (const more of [[], ['--interval', '1s']]) {
      const args = ['collect', '--textfile-dir', missing, '--state-dir', join(root, 'state'), '--nvidia-smi', smi];
      const result = await runCli([...args, '--csv-dir', join(root, 'csv'), '--task', 't', ...more]);
      expect({ exit: result.exitCode, stdout: result.stdout, stderr: result.stderr }).toEqual({
        exit: 2,
        stdout: '',
        stderr: `gpu-textfile: --textfile-dir: ${missing} does not exist (a mistyped one would never be read); give node_exporter's --collector.textfile.directory, create it, or run gpu-textfile install\n`,
      });
      expect(await readdir(root)).toEqual(['nvidia-smi']);
    }
    // --dry-run writes nothing, so it needs no directory.
    const dry = await runCli(['collect', '--dry-run', '--textfile-dir', missing, '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: H200 });
    expect([dry.exitCode, dry.stderr]).toEqual([0, '']);
    expect(dry.stdout).toContain('nvidia_gpu_memory_used_bytes');
  });

  it('writes the textfile atomically with mode 0644, leaving no temp file, and says nothing', async () => {
    const d = await dirs();
    const result = await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    expect({ exit: result.exitCode, stderr: result.stderr, stdout: result.stdout }).toEqual({ exit: 0, stderr: '', stdout: '' });
    expect(await readdir(d.textfile)).toEqual(['nvidia_gpu.prom']);
    expect((await stat(join(d.textfile, 'nvidia_gpu.prom'))).mode & 0o777).toBe(0o644);
    const text = await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8');
    expect(checkExposition(text).problems).toEqual([]);
    expect(familiesIn(text).has('nvidia_gpu_memory_used_bytes')).toBe(true);
  });

  // A container sees the host at /host: process owners come from its /proc and /etc/passwd.
  it('--host-root reads process owners under that directory', async () => {
    const d = await dirs();
    const host = join(FIXTURES, 'hosts/process-owners');
    const result = await runCli(collectArgs(d, FAKE_SMI, '--dry-run', '--host-root', host), {
      FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load'),
    });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const users = checkExposition(result.stdout)
      .samples.filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes')
      .map((s) => [s.labels.pid, s.labels.user]);
    expect(users).toContainEqual(['2006', 'alice']);
    expect(users).toContainEqual(['2008', '1234']);
  });

  // Who each process runs for, from its /proc/PID/cgroup under --host-root, beside its owner.
  it('--host-root reads each process cgroup: container, pod, unit, Slurm job', async () => {
    const d = await dirs();
    const host = await attributionHost(join(d.root, 'host'));
    const result = await runCli(collectArgs(d, FAKE_SMI, '--dry-run', '--host-root', host), {
      FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load'),
    });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const parsed = checkExposition(result.stdout);
    expect(parsed.problems).toEqual([]);
    const series = parsed.samples
      .filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes')
      .map(({ labels: { gpu, pid, user, container_id, pod_uid, systemd_unit, slurm_job } }) => ({
        gpu,
        pid,
        labels: { user, container_id, pod_uid, systemd_unit, slurm_job },
      }));
    expect(series).toEqual([
      { gpu: '0', pid: '2006', labels: ATTRIBUTED['2006'] },
      { gpu: '0', pid: '2008', labels: ATTRIBUTED['2008'] },
      { gpu: '0', pid: '2007', labels: ATTRIBUTED['2007'] },
      { gpu: '1', pid: '2008', labels: ATTRIBUTED['2008'] },
    ]);
  });

  // A container's host tree is not ours: a FIFO planted at its etc/passwd must not hang the run.
  it('--host-root with a FIFO at etc/passwd: the run ends, owners by uid', { timeout: 60_000 }, async () => {
    const d = await dirs();
    const host = join(d.root, 'host');
    await cp(join(FIXTURES, 'hosts/process-owners'), host, { recursive: true });
    await rm(join(host, 'etc/passwd'));
    await execa('mkfifo', [join(host, 'etc/passwd')]);
    const result = await runCli(
      collectArgs(d, FAKE_SMI, '--dry-run', '--host-root', host),
      { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-load') },
      30_000,
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const users = checkExposition(result.stdout)
      .samples.filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes')
      .map((s) => [s.labels.pid, s.labels.user]);
    expect(users).toContainEqual(['2008', '1234']);
  });

  // The textfile is fine, but a sample the CSV trail could not keep is a failure the timer must see.
  it('exits 1 with one line when the CSV row cannot be written, the textfile still published', async () => {
    const d = await dirs();
    const { mkdir, symlink } = await import('node:fs/promises');
    await mkdir(d.csv);
    const victim = join(d.root, 'victim');
    await writeFile(victim, 'keep\n');
    await symlink(victim, join(d.csv, 'default.csv'));
    const result = await runCli(collectArgs(d, FAKE_SMI, '--csv-dir', d.csv), { FAKE_SMI_CAPTURE: H200 });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^gpu-textfile: write_failed: .*default\.csv.*symbolic link/)]);
    expect(await readFile(victim, 'utf8')).toBe('keep\n');
    expect(familiesIn(await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8')).has('nvidia_gpu_memory_used_bytes')).toBe(true);
  });

  it('--dry-run prints the same exposition and writes nothing anywhere', async () => {
    const d = await dirs();
    const result = await runCli(collectArgs(d, FAKE_SMI, '--dry-run', '--csv-dir', d.csv), { FAKE_SMI_CAPTURE: H200 });
    expect(result.exitCode).toBe(0);
    expect(checkExposition(result.stdout).problems).toEqual([]);
    expect(result.stdout).toMatch(/^nvidia_gpu_power_draw_watts\{gpu="0",uuid="GPU-d9041e44[^}]*\} 76\.68$/m);
    expect([await readdir(d.textfile), existsSync(d.state), existsSync(d.csv)]).toEqual([[], false, false]);
  });

  // Issue 39: --compat used to be dropped from --dry-run without a word. Each file is printed under
  // its name, as head(1) heads several, and each is the file a run without --dry-run writes.
  it('--dry-run --compat prints every file the run would write, each under its name', async () => {
    const d = await dirs();
    const compat = ['--compat', 'dcgm,nvidia_gpu_exporter'];
    const dry = await runCli(collectArgs(d, FAKE_SMI, '--dry-run', ...compat), { FAKE_SMI_CAPTURE: H200 });
    expect(dry.exitCode).toBe(0);
    expect(await readdir(d.textfile)).toEqual([]);
    const sections = dry.stdout.split(/^# ==> (\S+) <==\n/m);
    expect(sections[0]).toBe('');
    const printed = new Map<string, string>();
    for (let i = 1; i < sections.length; i += 2) printed.set(sections[i]!, sections[i + 1]!);
    expect([...printed.keys()]).toEqual(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom', 'nvidia_gpu_nvidia_gpu_exporter.prom']);
    expect(checkExposition(dry.stdout).problems).toEqual([]);
    const run = await runCli(collectArgs(d, FAKE_SMI, ...compat), { FAKE_SMI_CAPTURE: H200 });
    expect(run.exitCode).toBe(0);
    // The same text but for the run's own timing (its duration, when it succeeded).
    const steady = (text: string) => text.split('\n').filter((line) => !/collector|_seconds|scrape/.test(line));
    for (const [name, text] of printed) expect(steady(text)).toEqual(steady(await readFile(join(d.textfile, name), 'utf8')));
  });

  // Issue 39: `collect --interval 1s` ran on and printed nothing. On a terminal it says once what it
  // does and how to stop it; into a pipe (systemd's journal) it says nothing at all.
  it('--interval on a terminal says once what it does and how it stops; into a pipe, nothing', { timeout: 90_000 }, async () => {
    const d = await dirs();
    const args = ['collect', '--source', 'demo', '--interval', '1s', '--textfile-dir', d.textfile, '--state-dir', d.state];
    const shell = `stty cols 200; exec timeout -s INT 4 ${process.execPath} ${CLI} ${args.join(' ')}`;
    const terminal = await execa('script', ['-qec', shell, '/dev/null'], {
      env: cliEnv(),
      extendEnv: false,
      reject: false,
      timeout: 60_000,
    });
    const lines = terminal.stdout
      .replace(/\r/g, '')
      .split('\n')
      .filter((line) => line !== '');
    expect(lines).toEqual([
      `gpu-textfile: collecting every 1 s from the demo recordings (not this host), into ${join(d.textfile, 'nvidia_gpu.prom')}; Ctrl-C stops it`,
    ]);
    const piped = await execa(process.execPath, [CLI, ...args], {
      env: cliEnv(),
      extendEnv: false,
      reject: false,
      timeout: 4000,
      killSignal: 'SIGINT',
    });
    expect(piped.stderr).toBe('');
  });

  it('steady state: one --query-gpu and one --query-compute-apps call per run', async () => {
    const d = await dirs();
    const log = join(d.root, 'calls.log');
    await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200, FAKE_SMI_LOG: log });
    await writeFile(log, '');
    const second = await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200, FAKE_SMI_LOG: log });
    expect(second.exitCode).toBe(0);
    const calls = (await readFile(log, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as string[])[0]!.split('=')[0]);
    expect(calls.sort()).toEqual(['--query-compute-apps', '--query-gpu']);
  });

  it('adds --label constant labels to every series, and takes options from GPU_TEXTFILE_* variables', async () => {
    const d = await dirs();
    const result = await runCli(['collect', '--nvidia-smi', FAKE_SMI, '--label', 'cluster=a"b', '--label', 'rack=r1'], {
      FAKE_SMI_CAPTURE: H200,
      GPU_TEXTFILE_TEXTFILE_DIR: d.textfile,
      GPU_TEXTFILE_STATE_DIR: d.state,
    });
    expect(result.exitCode).toBe(0);
    const samples = checkExposition(await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8')).samples;
    expect(samples.every((s) => s.labels.cluster === 'a"b' && s.labels.rack === 'r1')).toBe(true);
  });

  it.each([
    [['--label', 'gpu=1'], /"gpu" is a label gpu-textfile sets itself/],
    [['--label', 'bad-name=1'], /not key=value with a valid label name/],
    [['--timeout', 'soon'], /--timeout: "soon" is not a duration/],
    [['--file-name', 'gpu.txt'], /must be a plain name ending in \.prom/],
  ])('rejects bad options %j with exit 2 and writes nothing', async (more, message) => {
    const d = await dirs();
    const result = await runCli(collectArgs(d, FAKE_SMI, ...more), { FAKE_SMI_CAPTURE: H200 });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(existsSync(join(d.textfile, 'nvidia_gpu.prom'))).toBe(false);
  });

  it('a GPU row printed twice: that GPU is unparsable, the other reports, and the run succeeds', async () => {
    const d = await dirs();
    const smiCapture = join(d.root, 'h200x2__580.159.04__duplicated-row');
    await cp(H200, smiCapture, { recursive: true });
    const lines = (await readFile(join(smiCapture, 'query-gpu.csv'), 'utf8')).split('\n');
    await writeFile(join(smiCapture, 'query-gpu.csv'), [...lines.slice(0, 3), lines[2], ...lines.slice(3)].join('\n'));
    const result = await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: smiCapture });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(
      /^gpu-textfile: nvidia-smi --query-gpu: GPU 1 \(GPU-697eaabb[^)]*\) is on more than one row: "[^\n]*"\n$/,
    );
    const samples = checkExposition(await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8')).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up').map((s) => [s.labels.gpu, s.value])).toEqual([
      ['0', 1],
      ['1', 0],
    ]);
    expect(samples.filter((s) => s.name === 'nvidia_gpu_power_draw_watts').map((s) => s.labels.gpu)).toEqual(['0']);
  });

  it('--slow-fields takes effect on the next run, whatever the state learned without it', async () => {
    const d = await dirs();
    expect((await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 })).exitCode).toBe(0);
    const result = await runCli(collectArgs(d, FAKE_SMI, '--slow-fields'), { FAKE_SMI_CAPTURE: H200 });
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    const text = await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8');
    expect(familiesIn(text).has('nvidia_gpu_clocks_event_reason_seconds_total')).toBe(true);
  });

  it('removes temp files a crashed run left', async () => {
    const d = await dirs();
    await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    await writeFile(join(d.textfile, 'nvidia_gpu.prom.123456789'), 'half a fi');
    await writeFile(join(d.textfile, 'other.prom.42'), 'not ours');
    await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    expect((await readdir(d.textfile)).sort()).toEqual(['nvidia_gpu.prom', 'other.prom.42']);
  });
});

// Each failure mode ends in a file with the health block only, exit 1, and one line on stderr.
const failures: [title: string, smi: (d: { root: string }) => string, env: Record<string, string>, reason: string, timeout?: string][] = [
  ['nvidia-smi missing', (d) => join(d.root, 'no-such-nvidia-smi'), {}, 'nvidia_smi_not_found'],
  ['driver unreachable (exit 9)', () => FAKE_SMI, { FAKE_SMI_CAPTURE: capture('constructed__driver-unreachable') }, 'driver_unreachable'],
  [
    'NVML library missing (exit 12)',
    () => FAKE_SMI,
    { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__nvml-library-missing') },
    'nvml_library_missing',
  ],
  [
    'GPU access blocked (exit 17)',
    () => FAKE_SMI,
    { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__gpu-access-blocked') },
    'gpu_access_blocked',
  ],
  ['no devices (exit 6)', () => FAKE_SMI, { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__no-devices') }, 'no_devices'],
  ['NVML unknown error (exit 255)', () => FAKE_SMI, { FAKE_SMI_CAPTURE: capture('constructed__nvml-unknown-error') }, 'nvml_unknown_error'],
  [
    'driver/library mismatch',
    () => FAKE_SMI,
    { FAKE_SMI_CAPTURE: capture('constructed__driver-library-mismatch') },
    'driver_library_mismatch',
  ],
  ['other exit status', () => join(FAKE_BIN, 'exit'), { FAKE_SMI_EXIT: '3' }, 'nvidia_smi_failed'],
  ['garbage on stdout', () => join(FAKE_BIN, 'garbage'), {}, 'unparsable_output'],
  ['hang, SIGTERM ignored', () => join(FAKE_BIN, 'hang'), {}, 'timeout', '700ms'],
  ['a child holds stdout open', () => join(FAKE_BIN, 'holds-stdout'), {}, 'timeout', '700ms'],
];

describe('gpu-textfile collect when nvidia-smi fails', () => {
  it.each(failures)('%s', { timeout: 90_000 }, async (_, smi, env, reason, timeout) => {
    const d = await dirs();
    const good = await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    expect(good.exitCode).toBe(0);
    const before = checkExposition(await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8')).samples;
    const lastSuccess = before.find((s) => s.name === 'nvidia_gpu_collector_last_success_timestamp_seconds')!.value;

    // The hung stand-ins live 60 s: a run that returns before its own 45 s deadline did not wait for
    // them (a condition, not a duration measured against a bound a busy machine can cross).
    const result = await runCli(collectArgs(d, smi(d), ...(timeout ? ['--timeout', timeout] : [])), env, 45_000);
    expect(result.timedOut).toBe(false);
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr.trimEnd()).toMatch(
      new RegExp(
        `^gpu-textfile: ${reason}: .*\\(wrote .* with the health block only; (try: gpu-textfile doctor|gpu-textfile doctor says [a-z_]+: .*)\\)(; to see what gpu-textfile produces without a GPU: gpu-textfile collect --dry-run --source demo)?$`,
      ),
    );

    const text = await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8');
    const { samples, problems } = checkExposition(text);
    expect(problems).toEqual([]);
    expect(samples.filter((s) => GPU_SERIES.test(s.name))).toEqual([]);
    const value = (name: string) => samples.find((s) => s.name === name)?.value;
    expect(value('nvidia_gpu_collector_success')).toBe(0);
    expect(samples.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels).toEqual({ reason });
    expect(value('nvidia_gpu_collector_last_success_timestamp_seconds')).toBe(lastSuccess);
    expect(await readdir(d.textfile)).toEqual(['nvidia_gpu.prom']);
  });

  // "At once" as a condition, not a duration: the second returns while the first still holds the lock
  // (its --timeout is far longer than a start takes), so it cannot have waited for it.
  it('a collect started while another waits on a hung nvidia-smi returns at once (exit 75)', { timeout: 90_000 }, async () => {
    const d = await dirs();
    const hung = runCli(collectArgs(d, join(FAKE_BIN, 'hang'), '--timeout', '20s'), {}, 60_000);
    let hungEnded = false;
    void hung.finally(() => (hungEnded = true));
    const lock = join(d.textfile, '.nvidia_gpu.prom.lock');
    expect(await eventually(async () => existsSync(lock))).toBe(true);
    const second = await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    expect(hungEnded).toBe(false);
    expect(existsSync(lock)).toBe(true);
    expect(second.exitCode).toBe(75);
    expect(second.stderr).toMatch(/another collect \(pid \d+\) is still running/);
    expect((await hung).exitCode).toBe(1);
    expect(existsSync(lock)).toBe(false);
  });

  it('one GPU lost after a good run: the other keeps reporting, the lost one is nvidia_gpu_up 0', async () => {
    const d = await dirs();
    await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    const result = await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__gpu-lost') });
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toMatch(
      /^gpu-textfile: GPU 1 \(GPU-697eaabb[^)]*\) did not answer: .*Unable to determine the device handle for GPU 00000000:00:07.0: Unknown Error\n$/,
    );
    const samples = checkExposition(await readFile(join(d.textfile, 'nvidia_gpu.prom'), 'utf8')).samples;
    expect(samples.filter((s) => s.name === 'nvidia_gpu_up').map((s) => [s.labels.gpu, s.value])).toEqual([
      ['0', 1],
      ['1', 0],
    ]);
    expect(samples.filter((s) => s.name === 'nvidia_gpu_temperature_celsius').map((s) => s.labels.gpu)).toEqual(['0']);
  });

  it('a lock left by a process that is gone is taken over', async () => {
    const d = await dirs();
    await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    await writeFile(join(d.textfile, '.nvidia_gpu.prom.lock'), '2147483646\n');
    const result = await runCli(collectArgs(d), { FAKE_SMI_CAPTURE: H200 });
    expect(result.exitCode).toBe(0);
  });
});
