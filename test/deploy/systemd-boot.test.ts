import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, type Container } from './boot/container.js';
import { bootWithPackage, csvRows, FAILING_CAPTURE, journal, sampleValue, scrape, useCapture } from './boot/deployment.js';
import { calendarMarks, parseShownSpan, parseShownTime, runsOf, type Run } from './boot/journal.js';

// The units as a user deploys them: a minimal Debian (systemd, Debian's node_exporter) booted by
// systemd-nspawn, gpu-textfile installed from its npm tarball, `gpu-textfile install` run inside.
// Static checks (systemd-analyze verify, security) cannot see what only a running systemd does:
// how far apart a timer's runs land, what `enable` makes of a unit, whether a switch leaves both modes on.

const TEXTFILE = '/var/lib/prometheus/node-exporter/nvidia_gpu.prom';
const CSV_DIR = '/var/log/gpu-textfile';
const INSTALL = `gpu-textfile install --csv-dir ${CSV_DIR} --task testhost`;
const COLLECTOR = 'gpu-textfile.service';

describe('the deployment, booted under systemd', () => {
  let booted: Container | undefined;
  const box = () => booted ?? expect.fail('the container did not boot (see beforeAll)');
  const tail = async () => (await box().run(['journalctl', '--no-pager', '-n', '80', '-o', 'short-unix'])).stdout;
  const collectorRuns = async () => runsOf(await journal(box(), ['-u', COLLECTOR]), COLLECTOR);
  /** The first run of the collector that starts after `since` (seconds), once it has finished. */
  const nextRun = (since: number, what: string) =>
    waitFor(what, async () => (await collectorRuns()).find((run) => run.start > since && run.result), 60_000, tail);
  const now = () => Date.now() / 1000;
  let failingRun: Run | undefined;

  beforeAll(async () => {
    // A fresh machine builds the Debian root first (minutes); later runs boot the cached one.
    booted = await bootWithPackage();
    await booted.sh(INSTALL);
  }, 20 * 60_000);
  afterAll(async () => {
    await booted?.stop();
  }, 120_000);

  it('install enables the timers; collect runs every 15 s, each run collecting under the hardening', async () => {
    expect(await box().sh('systemctl is-enabled gpu-textfile.timer gpu-textfile-archive.timer')).toBe('enabled\nenabled');
    const shown = await box().sh(`systemctl show -p ProtectSystem -p CapabilityBoundingSet -p PrivateNetwork ${COLLECTOR}`);
    expect(new Set(shown.split('\n'))).toEqual(new Set(['CapabilityBoundingSet=', 'ProtectSystem=strict', 'PrivateNetwork=yes']));
    const runs = await waitFor(
      'four finished runs of the collector',
      async () => {
        const found = (await collectorRuns()).slice(0, 4);
        return found.length === 4 && found.every((run) => run.result) ? found : undefined;
      },
      120_000,
      tail,
    );
    expect(runs.filter((run) => !run.result!.ok)).toEqual([]);
    // Each run wrote its CSV row: it collected, rather than exiting 75 (lock held), which also "succeeds".
    const rows = await csvRows(box(), `${CSV_DIR}/testhost.csv`);
    const withoutRow = runs.filter((run) => !rows.some((row) => row.time >= run.start - 0.001 && row.time <= run.result!.time));
    expect(withoutRow).toEqual([]);
    // What the timer promises, not a duration: OnCalendar=*:*:0/15 fires on each quarter minute, one
    // run per mark, none skipped or doubled, none early (starts from systemd's own "Starting" lines,
    // logged when the run began, however busy the machine). A period counted from each activation
    // (OnUnitActiveSec) slips a second further past its mark each run.
    const starts = runs.map((run) => run.start);
    const marks = calendarMarks(starts, 15);
    expect(
      marks.map((m) => m.mark - marks[0]!.mark),
      `starts ${starts.join(', ')}`,
    ).toEqual([0, 1, 2, 3]);
    expect(marks.filter((m) => m.after < 0)).toEqual([]);
    // And the schedule as systemd holds it: AccuracySec=1s, its own record of when the timer fired
    // (not when journald got the line) at or after a quarter-minute mark, and the next elapse it plans
    // on a mark. How soon after the mark it fired is the machine's load, not the schedule: not asserted.
    const timerShows = (property: string) => box().sh(`systemctl show --timestamp=us+utc -p ${property} --value gpu-textfile.timer`);
    expect(parseShownSpan(await timerShows('AccuracyUSec'))).toBe(1);
    const [fired] = calendarMarks([parseShownTime(await timerShows('LastTriggerUSec')) ?? Number.NaN], 15);
    expect(fired!.after).toBeGreaterThanOrEqual(0);
    const next = parseShownTime(await timerShows('NextElapseUSecRealtime'));
    expect(calendarMarks([next ?? Number.NaN], 15)[0]!.after).toBe(0);
  }, 180_000);

  it('node_exporter, inside the container on 127.0.0.1, scrapes the fresh file', async () => {
    const finished = (await collectorRuns()).filter((run) => run.result);
    const last = finished[finished.length - 1]!;
    const text = await scrape(box());
    expect(sampleValue(text, 'node_textfile_scrape_error')).toBe(0);
    expect(sampleValue(text, 'nvidia_gpu_collector_success')).toBe(1);
    expect(sampleValue(text, 'nvidia_gpu_up{gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000"}')).toBe(1);
    // node_exporter gives the file's mtime in whole seconds: written by the last run or a later one.
    expect(sampleValue(text, `node_textfile_mtime_seconds{file="${TEXTFILE}"}`)).toBeGreaterThanOrEqual(Math.floor(last.start));
  });

  it("reads the jobs' reserved GPUs as the hardened unit runs: a job of a process without capabilities is named, another user's is unknown", async () => {
    // Two Slurm-shaped jobs, each a real `sleep` given GPU 0 as Slurm gives it: job 4343 runs as root
    // stripped of every capability, job 4242 as nobody. The container's cgroup tree is read-only
    // (nspawn), so their job_<id> cgroups are laid out in a host root beside it whose proc, etc and
    // dev are the real ones (GPU_TEXTFILE_HOST_ROOT): the environs the unit opens are the processes'
    // own. The unit (root, CapabilityBoundingSet= empty) may open the first's (same uid, no capability
    // it lacks), not the second's (another uid: CAP_SYS_PTRACE): unknown, never "not reserved".
    const host = '/srv/reservations-host';
    const task = (job: number) => `${host}/sys/fs/cgroup/system.slice/slurmstepd.scope/job_${job}/step_batch/user/task_0`;
    await box().sh(
      `mkdir -p ${task(4343)} ${task(4242)} && echo cpu > ${host}/sys/fs/cgroup/cgroup.controllers && ` +
        `ln -sfn /proc ${host}/proc && ln -sfn /etc ${host}/etc && ln -sfn /dev ${host}/dev`,
    );
    const start = (job: number, user: string) =>
      box().sh(
        `(setsid setpriv ${user} --inh-caps=-all --bounding-set=-all env SLURM_JOB_ID=${job} SLURM_JOB_GPUS=0 CUDA_VISIBLE_DEVICES=0 sleep 600 </dev/null >/dev/null 2>&1 & ` +
          `echo $! > ${task(job)}/cgroup.procs; echo $! >> ${host}/sleeps)`,
      );
    await start(4343, '');
    await start(4242, '--reuid=65534 --regid=65534 --clear-groups');
    await box().sh(`echo GPU_TEXTFILE_HOST_ROOT=${host} >> /etc/default/gpu-textfile`);
    try {
      const since = now();
      await nextRun(since, 'a run of the collector after the jobs started');
      const text = await scrape(box());
      expect(
        sampleValue(
          text,
          'nvidia_gpu_reservation_info{gpu="0",job_id="4343",job_kind="slurm",user="root",uuid="GPU-00000000-0000-0000-0000-000000000000"}',
        ),
        text
          .split('\n')
          .filter((line) => line.includes('reservation'))
          .join('\n'),
      ).toBe(1);
      expect(sampleValue(text, 'nvidia_gpu_reservation_unknown_jobs')).toBe(1);
      expect(text).not.toContain('job_id="4242"');
    } finally {
      // The two sleeps, by their pids.
      await box().sh(`sed -i '/^GPU_TEXTFILE_HOST_ROOT=/d' /etc/default/gpu-textfile; kill $(cat ${host}/sleeps) || true`);
    }
  }, 180_000);

  it('the archive timer is on, and its service rotates the CSV trail', async () => {
    expect(await box().sh('systemctl is-active gpu-textfile-archive.timer')).toBe('active');
    const before = now();
    await box().sh('systemctl start gpu-textfile-archive.service');
    const [run] = runsOf(await journal(box(), ['-u', 'gpu-textfile-archive.service']), 'gpu-textfile-archive.service').filter(
      (found) => found.start > before,
    );
    expect(run?.result?.ok).toBe(true);
    const archives = (await box().sh(`ls ${CSV_DIR}`)).split('\n').filter((name) => /^testhost-\d{8}\.csv\.gz$/.test(name));
    expect(archives).toHaveLength(1);
    const archived = (await box().sh(`gzip -dc ${CSV_DIR}/${archives[0]}`)).split('\n');
    expect(archived[0]).toMatch(/^time,host,task_id,/);
    expect(archived.length).toBeGreaterThanOrEqual(5);
    // Copied, then truncated in place: what the live file holds now came after the last archived row.
    const lastArchived = Date.parse(archived[archived.length - 1]!.split(',')[0]!) / 1000;
    const live = await csvRows(box(), `${CSV_DIR}/testhost.csv`);
    expect(live.filter((row) => row.time <= lastArchived)).toEqual([]);
  });

  it('install --daemon enables the long-running service (not static) and leaves no timer running', async () => {
    const before = now();
    await box().sh(`${INSTALL} --daemon`);
    // "static" (no [Install] section) would start it now and never again after a reboot.
    expect((await box().run(['systemctl', 'is-enabled', 'gpu-textfile-daemon.service'])).stdout).toBe('enabled');
    expect((await box().run(['systemctl', 'is-active', 'gpu-textfile-daemon.service'])).stdout).toBe('active');
    // A timer left on would start a one-shot collect every 15 s beside it, each exiting 75.
    expect((await box().run(['systemctl', 'is-enabled', 'gpu-textfile.timer'])).stdout).not.toBe('enabled');
    expect((await box().run(['systemctl', 'is-active', 'gpu-textfile.timer'])).stdout).not.toBe('active');
    await waitFor(
      'a CSV row from the long-running service',
      async () => ((await csvRows(box(), `${CSV_DIR}/testhost.csv`)).some((row) => row.time > before) ? true : undefined),
      60_000,
      tail,
    );
    expect(sampleValue(await box().sh(`cat ${TEXTFILE}`), 'nvidia_gpu_collector_success')).toBe(1);
  });

  it('install without --daemon brings the timer back and stops the long-running service', async () => {
    // Its first run meets a failing nvidia-smi, for the test below: one wait for a run instead of two.
    await useCapture(box(), FAILING_CAPTURE);
    const before = now();
    await box().sh(INSTALL);
    expect((await box().run(['systemctl', 'is-enabled', 'gpu-textfile.timer'])).stdout).toBe('enabled');
    expect((await box().run(['systemctl', 'is-active', 'gpu-textfile.timer'])).stdout).toBe('active');
    expect((await box().run(['systemctl', 'is-enabled', 'gpu-textfile-daemon.service'])).stdout).not.toBe('enabled');
    expect((await box().run(['systemctl', 'is-active', 'gpu-textfile-daemon.service'])).stdout).not.toBe('active');
    failingRun = await nextRun(before, 'a run of the timer after switching back');
  });

  it('a failing nvidia-smi (exit 9) gives a success 0 file and a journal line', async () => {
    const run = failingRun ?? expect.fail('the timer did not run after switching back (see the test before)');
    // Under the long-running service (left on by a failed switch), a timer run would only exit 75.
    expect(
      (await box().run(['systemctl', 'is-active', 'gpu-textfile-daemon.service'])).stdout,
      'the long-running service still runs',
    ).not.toBe('active');
    expect(run.result!.ok).toBe(false);
    const text = await scrape(box());
    expect(sampleValue(text, 'nvidia_gpu_collector_success')).toBe(0);
    expect(sampleValue(text, 'nvidia_gpu_collector_error{reason="driver_unreachable"}')).toBe(1);
    expect(sampleValue(text, 'nvidia_gpu_up{gpu="0",uuid="GPU-00000000-0000-0000-0000-000000000000"}')).toBeUndefined();
    const said = (await journal(box(), ['-u', COLLECTOR])).filter(
      (entry) => entry.identifier !== 'systemd' && entry.time >= run.start && entry.time <= run.result!.time,
    );
    expect(said.map((entry) => entry.message).join('\n')).toMatch(/driver_unreachable/);
    // Tagged with the program's name (SyslogIdentifier=), not the executable's (node).
    expect([...new Set(said.map((entry) => entry.identifier))]).toEqual(['gpu-textfile']);
  });

  it('uninstall leaves no unit, no enabled symlink and no textfile', async () => {
    await box().sh('gpu-textfile uninstall');
    expect(await box().sh('find /etc/systemd/system -name "gpu-textfile*"')).toBe('');
    expect((await box().run(['systemctl', 'list-unit-files', '--no-legend', 'gpu-textfile*'])).stdout).toBe('');
    // A unit systemd still holds, e.g. "not-found failed" after a failed last run, stays in
    // `systemctl --failed` (and node_exporter's systemd collector) until the next boot.
    expect((await box().run(['systemctl', 'list-units', '--all', '--no-legend', 'gpu-textfile*'])).stdout).toBe('');
    expect((await box().run(['test', '-e', TEXTFILE])).exitCode).toBe(1);
  });
});
