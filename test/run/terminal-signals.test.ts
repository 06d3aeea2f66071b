import { execa } from 'execa';
import { CLI } from '../support/helpers.js';
import { describe, expect, it } from 'vitest';
import { inForeground, passSignals, TERMINAL_SIGNALS } from '../../src/run/signals.js';

// Ctrl-C reaches the job from the terminal itself while the job is in the terminal's foreground
// group (run's, which it starts in): run passing it again would give the job a second SIGINT
// milliseconds later, inside the cleanup its first KeyboardInterrupt started. A job that left the
// group (timeout, setsid) and a run away from any terminal (a scheduler's `kill -INT <run>`) get it
// from run only. What counts is the job's group, read from the job's /proc/PID/stat.

// script(1) runs its command through `$SHELL -c`. bash execs a lone command, dash (CI's /bin/sh)
// keeps itself as the terminal's session leader in the foreground group: a Ctrl-C then kills that
// sh, and script reports 130 whatever run and its job did. So the shell is fixed here, and each
// command is exec'd: what the terminal holds is the command itself, under any shell.
const SCRIPT_ENV = { SHELL: '/bin/sh' };

/** /proc/self/stat of a `cat` run the given way: real kernel text, not a hand-written line. */
const statOf = async (file: string, args: string[]) => (await execa(file, args, { env: SCRIPT_ENV })).stdout;

describe("run's terminal signals", () => {
  it('reads a process in a terminal’s foreground group as such, and one without a terminal as not', async () => {
    // script(1) gives cat a pseudo-terminal whose foreground group is cat's own.
    const foreground = await statOf('script', ['-qc', 'exec cat /proc/self/stat', '/dev/null']);
    // setsid: a new session, no controlling terminal (tpgid -1).
    const detached = await statOf('setsid', ['cat', '/proc/self/stat']);
    expect(inForeground(foreground)).toBe(true);
    expect(inForeground(detached)).toBe(false);
    expect(inForeground(undefined)).toBe(false);
    // A command name with spaces and parentheses does not shift the fields.
    const odd = foreground.replace('(cat)', '(a) b (c d)');
    expect(inForeground(odd)).toBe(true);
  });

  it('passes SIGINT, SIGQUIT and SIGHUP only when the job is not in its terminal’s foreground; every other signal always', async () => {
    const foreground = await statOf('script', ['-qc', 'exec cat /proc/self/stat', '/dev/null']);
    const detached = await statOf('setsid', ['cat', '/proc/self/stat']);
    for (const [stat, terminalPassed] of [
      [foreground, false],
      [detached, true],
    ] as const) {
      const passed: NodeJS.Signals[] = [];
      const { release } = passSignals(
        (signal) => passed.push(signal),
        () => stat,
      );
      try {
        for (const signal of ['SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGTERM', 'SIGUSR1'] as const) process.emit(signal, signal);
      } finally {
        release();
      }
      const expected = ['SIGINT', 'SIGQUIT', 'SIGHUP', 'SIGTERM', 'SIGUSR1'].filter(
        (signal) => terminalPassed || !TERMINAL_SIGNALS.has(signal as NodeJS.Signals),
      );
      expect(passed).toEqual(expected);
    }
  });

  /**
   * `run -- JOB` in a real terminal (script(1)'s pseudo-terminal, run in its foreground group), a
   * Ctrl-C typed once JOB printed "ready"; what the terminal showed, once run ended.
   */
  async function ctrlC(job: string): Promise<{ output: string; exitCode: number | undefined }> {
    const command = `exec ${process.execPath} ${CLI} run --source demo --interval 1s -- sh -c '${job}'`;
    const child = execa('script', ['-qefc', command, '/dev/null'], {
      reject: false,
      stdin: 'pipe',
      all: true,
      timeout: 60_000,
      env: SCRIPT_ENV,
    });
    let output = '';
    let typed = false;
    child.all?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (!typed && output.includes('ready')) {
        typed = true;
        child.stdin?.write('\x03');
      }
    });
    const result = await child;
    return { output, exitCode: result.exitCode };
  }

  it('Ctrl-C in a terminal reaches a job in the foreground group once, not again from run', async () => {
    // The job counts its SIGINTs, each handled for a second (as a checkpoint save would take): the
    // terminal's, and run's copy had it been passed, landing in that handling.
    const job = 'n=0; trap "n=\\$((n+1)); sleep 1" INT; echo ready; while [ $n -lt 1 ]; do sleep 0.05; done; echo got $n; exit 3';
    const { output, exitCode } = await ctrlC(job);
    // What the terminal showed (the job's lines and run's summary) says why, should this ever fail.
    expect(output).toContain('got 1');
    expect(exitCode, output).toBe(3);
  });

  it('Ctrl-C in a terminal reaches a job that left the group (timeout), through run', async () => {
    // timeout(1) runs in a process group of its own: the terminal's Ctrl-C reaches only run.
    const { output, exitCode } = await ctrlC('echo ready; exec timeout 60 sleep 60');
    expect(output).toMatch(/SIGINT|130/);
    expect(exitCode, output).toBe(130);
  });
});
