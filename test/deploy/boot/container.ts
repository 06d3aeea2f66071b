import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, open, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

/** A Debian root booted under its own systemd by systemd-nspawn, driven through nsenter. */
export interface Container {
  /** Runs a command inside, as root, with a clean environment; never rejects. */
  run: (
    argv: readonly string[],
    options?: { input?: string; timeoutMs?: number },
  ) => Promise<{ exitCode: number | undefined; stdout: string; stderr: string }>;
  /** Runs a command inside and returns its stdout; throws with its stderr when it fails. */
  sh: (script: string, options?: { input?: string; timeoutMs?: number }) => Promise<string>;
  /** systemd-nspawn's own output: the first place to look when the boot itself fails. */
  log: () => Promise<string>;
  /** The host's PID of the container's systemd: what a tool that enters it with nsenter targets (Ansible's nsenter connection). */
  init: () => number;
  /** Powers it off (SIGKILL after a deadline), then removes the throwaway root. */
  stop: () => Promise<void>;
}

// What systemd gives a service (plus the sbin of cron's PATH): no variable of the test's own leaks in.
const ENVIRONMENT = [
  'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  'HOME=/root',
  'LANG=C.UTF-8',
  'SYSTEMD_PAGER=',
  'SYSTEMD_COLORS=0',
];

/**
 * The boot, in a private mount namespace of its own (`unshare --mount`): a tmpfs on
 * /run/systemd/nspawn (nspawn keeps its per-machine state there, and on this kind of host /run is not
 * a tmpfs), the overlay of the cached root, then nspawn. Every mount lives and dies with that one
 * process, so nothing is left mounted on this machine whatever happens to the test. Its systemd gets
 * the overlay as its root: it never sees this machine's /tmp, which its boot-time tmpfiles would empty.
 * --keep-unit and --register=no: there is no system bus here for nspawn to ask for a scope or a machine.
 */
const BOOT_SCRIPT = `set -eu
mkdir -p /run/systemd/nspawn
mount -t tmpfs -o mode=0755 tmpfs /run/systemd/nspawn
mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$2/merged"
exec systemd-nspawn --quiet --keep-unit --register=no --boot --private-network --console=passive --machine="$3" --directory="$2/merged"`;

/** The host PID of a descendant of `ancestor` that is PID 1 of its own PID namespace, if one is up yet. */
async function namespaceInit(ancestor: number): Promise<number | undefined> {
  const pending = [ancestor];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    const status = await readProcFile(`/proc/${pid}/status`);
    if (pid !== ancestor && /^NSpid:\s+\d+\s+1$/m.test(status ?? '')) return pid;
    const tasks = (await readdir(`/proc/${pid}/task`).catch(ignoreGone)) ?? [];
    for (const task of tasks) {
      const children = await readProcFile(`/proc/${pid}/task/${task}/children`);
      pending.push(...(children ?? '').split(/\s+/).filter(Boolean).map(Number));
    }
  }
  return undefined;
}

/** A process that has exited under our feet leaves ENOENT (or ESRCH) behind: no longer there. */
function ignoreGone(error: NodeJS.ErrnoException): undefined {
  if (error.code === 'ENOENT' || error.code === 'ESRCH') return undefined;
  throw error;
}
/** SIGKILL, unless the process has exited meanwhile. */
function killIfThere(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (error) {
    ignoreGone(error as NodeJS.ErrnoException);
  }
}
const readProcFile = (path: string) => readFile(path, 'utf8').catch(ignoreGone);
/** The start time field of /proc/PID/stat: the same PID with another start time is another process. */
const startTime = async (pid: number) => (await readProcFile(`/proc/${pid}/stat`))?.replace(/^.*\) /s, '').split(' ')[19];

/** Polls `probe` until it returns a value; throws naming `what` (and what `detail` says then) after `deadlineMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  deadlineMs: number,
  detail?: () => Promise<string>,
): Promise<T> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`${what}: not within ${deadlineMs / 1000} s${detail ? `\n${await detail()}` : ''}`);
    await sleep(500);
  }
}

/**
 * Boots `root` (read only: changes go to a throwaway upper directory). `prepare` fills that upper
 * directory before the boot; what it puts there appears in the container's root.
 */
export async function bootContainer(root: string, prepare: (upper: string) => Promise<void>): Promise<Container> {
  const dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-boot-'));
  for (const name of ['upper', 'work', 'merged']) await mkdir(join(dir, name));
  try {
    await prepare(join(dir, 'upper'));
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const logFile = join(dir, 'nspawn.log');
  const logHandle = await open(logFile, 'w');
  const log = () => readFile(logFile, 'utf8');
  const name = `gpu-textfile-test-${process.pid}`;
  let pid1: { pid: number; started: string | undefined } | undefined;

  const nspawn = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', BOOT_SCRIPT, 'boot', root, dir, name], {
    stdio: ['ignore', logHandle.fd, logHandle.fd],
  });
  const exited = new Promise<void>((resolve) => nspawn.once('exit', () => resolve()));
  const running = () => nspawn.exitCode === null && nspawn.signalCode === null;

  const stop = async () => {
    // SIGTERM makes nspawn ask the container's systemd to power off, cleanly.
    if (running()) nspawn.kill('SIGTERM');
    const halted = await Promise.race([exited.then(() => true), sleep(30_000).then(() => false)]);
    if (!halted) nspawn.kill('SIGKILL');
    // With nspawn gone, its PID 1 would live on: killing a namespace's init kills all that is in it.
    if (pid1 && pid1.started === (await startTime(pid1.pid))) killIfThere(pid1.pid);
    await exited;
    await waitFor(
      "the container's PID 1 to exit",
      async () => (pid1 && pid1.started === (await startTime(pid1.pid)) ? undefined : true),
      30_000,
    );
    await logHandle.close();
    await rm(dir, { recursive: true, force: true });
  };

  const run: Container['run'] = async (argv, options = {}) => {
    if (!pid1) throw new Error('the container is not up');
    const result = await execa('nsenter', ['-t', String(pid1.pid), '-a', '/usr/bin/env', '-i', ...ENVIRONMENT, ...argv], {
      reject: false,
      extendEnv: false,
      env: {},
      input: options.input ?? '',
      timeout: options.timeoutMs ?? 60_000,
    });
    return { exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr };
  };
  const sh: Container['sh'] = async (script, options) => {
    const result = await run(['sh', '-c', script], options);
    if (result.exitCode !== 0) throw new Error(`in the container, exit ${result.exitCode}: ${script}\n${result.stderr}${result.stdout}`);
    return result.stdout;
  };

  try {
    const pid = await waitFor(
      'systemd-nspawn to start the container',
      async () => (running() ? namespaceInit(nspawn.pid!) : 'exited'),
      60_000,
      log,
    );
    if (pid === 'exited') throw new Error(`systemd-nspawn exited with ${nspawn.exitCode ?? nspawn.signalCode}:\n${await log()}`);
    pid1 = { pid, started: await startTime(pid) };
    // nspawn's child becomes systemd only after setting up the root; systemctl needs its bus socket.
    await waitFor(
      "the container's systemd to listen",
      async () => ((await run(['test', '-S', '/run/systemd/private'])).exitCode === 0 ? true : undefined),
      60_000,
      log,
    );
    // "running", or "degraded" when a unit of Debian's own failed in the container: both are booted.
    const state = await run(['systemctl', 'is-system-running', '--wait'], { timeoutMs: 120_000 });
    if (!['running', 'degraded'].includes(state.stdout.trim())) {
      const failed = await run(['systemctl', '--failed', '--no-legend']);
      throw new Error(`the container did not boot: ${state.stdout}${state.stderr}\n${failed.stdout}\n${await log()}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { run, sh, log, init: () => pid1!.pid, stop };
}
