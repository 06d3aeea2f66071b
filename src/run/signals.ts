import { OWN_PROC, readTextIfAny } from '../host/host.js';

// What `run` does with each signal sent to it (docs/run.md, "Signals", says the same). Every signal
// that would end run by default is either passed to the job or has a reason here not to be: run must
// never end before its job, for that leaves the job orphaned, no summary, no status and a textfile
// saying the job still runs. Ending is the job's to decide; run then reaps it, summarises and exits
// with its status.

/** A signal run passes to its job, and why. */
export interface PassedSignal {
  signal: NodeJS.Signals;
  why: string;
}

/** The signals passed to the job while it runs; after it exited, they are ignored (run ends within seconds). */
export const PASSED_SIGNALS: readonly PassedSignal[] = [
  { signal: 'SIGTERM', why: 'a scheduler, systemd or kill stopping the job: it may save a checkpoint first' },
  { signal: 'SIGINT', why: 'Ctrl-C, or a scheduler: Python raises KeyboardInterrupt' },
  { signal: 'SIGHUP', why: 'the terminal went away' },
  { signal: 'SIGQUIT', why: 'Ctrl-\\: the job may dump its threads (faulthandler, a JVM) before it ends' },
  // Node would open its inspector on SIGUSR1 (a debugger on 127.0.0.1:9229, in a process run as
  // root): a listener of ours replaces that, here and in the launcher (src/launch/main.ts).
  { signal: 'SIGUSR1', why: 'Slurm\'s --signal=USR1@120 and others: "save a checkpoint now"' },
  { signal: 'SIGUSR2', why: 'the same, by other schedulers and frameworks' },
  { signal: 'SIGALRM', why: 'a deadline set from outside (timeout -s ALRM): ends the job unless it handles it' },
  { signal: 'SIGVTALRM', why: 'a timer signal: by default it ends the process, so it is the job that should get it' },
  { signal: 'SIGPROF', why: 'a timer signal, as SIGVTALRM (run never profiles itself)' },
  // Linux ends a process on each of these by default too; none has a use of its own in run.
  { signal: 'SIGIO', why: 'I/O possible (SIGPOLL, the same signal), which run never asks for: sent only by intent' },
  { signal: 'SIGPWR', why: 'a power failure (a UPS daemon): the job may save its state first' },
  { signal: 'SIGSTKFLT', why: 'unused on Linux: sent only by intent' },
  // Left to end run, these orphaned the job (run's own faults would come as SIGSEGV, SIGBUS, SIGILL
  // or SIGFPE, which stay left): sent to run, they are meant for the job it stands for.
  {
    signal: 'SIGXCPU',
    why: "a CPU time limit reached: Grid Engine's s_cpu (and a kill -XCPU by a scheduler); the job may save its state, or ends",
  },
  { signal: 'SIGTRAP', why: 'a breakpoint or trace trap: from outside (kill -TRAP), meant for the job' },
  { signal: 'SIGSYS', why: 'a bad or forbidden system call (seccomp): from outside (kill -SYS), meant for the job' },
];

/** Signals run catches and drops: neither passed nor left to end run. */
export const IGNORED_SIGNALS: readonly LeftSignal[] = [
  {
    signals: ['SIGXFSZ'],
    why: "a file size limit reached by run's own write (the CSV trail, the textfile): caught, the write then fails with EFBIG, said where run writes; passing it on would end the job over run's file",
  },
];

/** A signal left to the kernel's default action, and why. */
export interface LeftSignal {
  signals: readonly NodeJS.Signals[];
  why: string;
}

/** Those not passed on: each stops or ends run as it would any process, or never reaches run's handler. */
export const LEFT_SIGNALS: readonly LeftSignal[] = [
  {
    signals: ['SIGWINCH', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGCONT'],
    why: 'the terminal sends them to its foreground process group, which holds the job too (the job is started in the same group as run): passing them would double each; SIGWINCH is ignored by default, the stop signals stop run and the job alike',
  },
  { signals: ['SIGPIPE'], why: "ignored by Node.js: a write of run's that fails is handled where it writes (src/run/job.ts)" },
  {
    signals: ['SIGKILL', 'SIGSTOP'],
    why: 'cannot be caught: a SIGKILLed run leaves its job running and its textfile behind (its NVML reader ends with it)',
  },
  {
    signals: ['SIGABRT', 'SIGSEGV', 'SIGBUS', 'SIGFPE', 'SIGILL'],
    why: "faults and limits of run's own process: a handler cannot make it go on correctly",
  },
];

/**
 * The signals a terminal sends to its whole foreground process group (Ctrl-C, Ctrl-\\, a hang-up),
 * which holds the job too while it stays in run's group. Passed again, the job would get each
 * twice, milliseconds apart: a Python job's second KeyboardInterrupt lands in the except or finally
 * block that was saving its checkpoint (seen: `kill -INT` twice 10 ms apart interrupts the cleanup).
 * A job that left the group (`timeout`, `setsid`, anything calling setpgid) gets them from run only.
 */
export const TERMINAL_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set(['SIGINT', 'SIGQUIT', 'SIGHUP']);

/**
 * Whether a process is in its terminal's foreground process group, from its /proc/PID/stat text:
 * its pgrp (field 5) equals the terminal's foreground group (tpgid, field 8; -1 without a terminal).
 * Fields are counted after the command name's closing parenthesis, as the name may hold spaces.
 */
export function inForeground(stat: string | undefined): boolean {
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ') ?? [];
  const pgrp = Number(fields[2]);
  const tpgid = Number(fields[5]);
  return Number.isInteger(pgrp) && tpgid > 0 && tpgid === pgrp;
}

/**
 * Passes every PASSED_SIGNALS signal to `target` until release(); `target` says whether the job
 * still runs (after it exited, a signal is ignored: run is finishing). Installed before the job starts.
 * A terminal's signal is not passed while the job is in its terminal's foreground group: the
 * terminal sent it to the job already. `jobStat` reads the job's /proc/PID/stat, undefined before
 * it started (its own group is what counts: it may have left run's).
 */
export function passSignals(target: (signal: NodeJS.Signals) => void, jobStat: () => string | undefined): { release: () => void } {
  const handler = (signal: NodeJS.Signals) => {
    if (TERMINAL_SIGNALS.has(signal) && inForeground(jobStat())) return;
    target(signal);
  };
  const drop = () => {};
  const dropped = IGNORED_SIGNALS.flatMap((entry) => entry.signals);
  for (const { signal } of PASSED_SIGNALS) process.on(signal, handler);
  for (const signal of dropped) process.on(signal, drop);
  return {
    release: () => {
      for (const { signal } of PASSED_SIGNALS) process.off(signal, handler);
      for (const signal of dropped) process.off(signal, drop);
    },
  };
}

/** The /proc/PID/stat text of a process of this machine, if it is still there. */
export const processStat = (pid: number): string | undefined => readTextIfAny(`${OWN_PROC}/${pid}/stat`);
