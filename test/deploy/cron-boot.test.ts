import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, type Container } from './boot/container.js';
import { bootWithPackage, csvRows, FAILING_CAPTURE, GOOD_CAPTURE, journal, sampleValue, useCapture } from './boot/deployment.js';

// cron/gpu-textfile as a cron host uses it: the same booted Debian (its cron package, no MTA), the
// package installed from its npm tarball, the file copied to /etc/cron.d as the README says, the
// options in /etc/default/gpu-textfile. No systemd unit of ours is installed: cron alone runs collect.

const CSV = '/var/log/gpu-textfile/testhost.csv';
const OPTIONS = 'GPU_TEXTFILE_CSV_DIR=/var/log/gpu-textfile\nGPU_TEXTFILE_TASK=testhost\n';

describe("the cron.d file, booted under Debian's cron", () => {
  let booted: Container | undefined;
  const box = () => booted ?? expect.fail('the container did not boot (see beforeAll)');
  const tail = async () => (await box().run(['journalctl', '--no-pager', '-n', '80', '-o', 'short-unix'])).stdout;

  beforeAll(async () => {
    booted = await bootWithPackage();
    // The first run fails, to see where its output goes; the test switches nvidia-smi back after it.
    await useCapture(booted, FAILING_CAPTURE);
    // The textfile directory is node_exporter's to make (collect refuses a missing one): as an admin would, first.
    await booted.sh('mkdir -p /var/log/gpu-textfile /var/lib/node_exporter/textfile && cat > /etc/default/gpu-textfile', {
      input: OPTIONS,
    });
    await booted.sh('install -m 0644 "$(npm root -g)/gpu-textfile/cron/gpu-textfile" /etc/cron.d/gpu-textfile');
  }, 20 * 60_000);
  afterAll(async () => {
    await booted?.stop();
  }, 120_000);

  it("a failing run's output goes to syslog, tagged gpu-textfile, and not to mail", async () => {
    // cron reads the new file at the next minute and runs the first collect then.
    const logged = await waitFor(
      'a syslog line tagged gpu-textfile',
      async () => (await journal(box(), ['-t', 'gpu-textfile'])).find((entry) => /driver_unreachable/.test(entry.message)),
      150_000,
      tail,
    );
    await useCapture(box(), GOOD_CAPTURE);
    expect(logged.priority).toBe(4); // daemon.warning
    // Output left to cron is mailed, or with no MTA dropped with this line; neither may happen.
    const cron = await journal(box(), ['-t', 'CRON', '-t', 'cron']);
    expect(cron.filter((entry) => /MTA|mail/i.test(entry.message))).toEqual([]);
    expect((await box().run(['test', '-e', '/var/mail/root'])).exitCode).toBe(1);
  }, 180_000);

  it('collect runs four times a minute, each through flock', async () => {
    const rows = await waitFor(
      'four CSV rows',
      async () => {
        const found = await csvRows(box(), CSV);
        return found.length >= 4 ? found.slice(0, 4) : undefined;
      },
      180_000,
      tail,
    );
    const times = rows.map((row) => row.time);
    // The schedule, not its timing: the rows come one after another, and cron started the four
    // collect jobs of the first row's minute together, each under flock -n, three of them after
    // `sleep 15`, `30` and `45`. How far apart the rows land is the machine's load (Node.js starting
    // on a busy machine takes a second or several): not asserted.
    expect(
      times.slice(1).filter((time, i) => time <= times[i]!),
      `runs at ${times.join(', ')}`,
    ).toEqual([]);
    expect(rows.map((row) => row.status)).toEqual(['driver_unreachable', 'ok', 'ok', 'ok']);
    const minute = Math.floor(times[0]! / 60);
    const started = (await journal(box(), ['-t', 'CRON'])).filter(
      (entry) => Math.floor(entry.time / 60) === minute && / CMD \(/.test(entry.message),
    );
    const collects = started.filter((entry) => entry.message.includes('flock -n /run/lock/gpu-textfile.lock gpu-textfile collect'));
    expect(collects.map((entry) => /\(root\) CMD \((sleep \d+; )?/.exec(entry.message)?.[1] ?? '').sort()).toEqual([
      '',
      'sleep 15; ',
      'sleep 30; ',
      'sleep 45; ',
    ]);
    const text = (await box().run(['cat', '/var/lib/prometheus/node-exporter/nvidia_gpu.prom'])).stdout;
    expect(sampleValue(text, 'nvidia_gpu_collector_success')).toBe(1);
  }, 240_000);
});
