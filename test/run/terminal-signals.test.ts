import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { inForeground, passSignals, TERMINAL_SIGNALS } from '../../src/run/signals.js';

// Ctrl-C reaches the job from the terminal itself (the job is in run's process group, the
// terminal's foreground group): run passing it again would give the job a second SIGINT milliseconds
// later, inside the cleanup its first KeyboardInterrupt started. Away from a terminal (a scheduler's
// `kill -INT <run>`), only run can pass it on.

/** /proc/self/stat of a `cat` run the given way: real kernel text, not a hand-written line. */
const statOf = async (file: string, args: string[]) => (await execa(file, args)).stdout;

describe("run's terminal signals", () => {
  it('reads a process in a terminal’s foreground group as such, and one without a terminal as not', async () => {
    // script(1) gives cat a pseudo-terminal whose foreground group is cat's own.
    const foreground = await statOf('script', ['-qc', 'cat /proc/self/stat', '/dev/null']);
    // setsid: a new session, no controlling terminal (tpgid -1).
    const detached = await statOf('setsid', ['cat', '/proc/self/stat']);
    expect(inForeground(foreground)).toBe(true);
    expect(inForeground(detached)).toBe(false);
    expect(inForeground(undefined)).toBe(false);
    // A command name with spaces and parentheses does not shift the fields.
    const odd = foreground.replace('(cat)', '(a) b (c d)');
    expect(inForeground(odd)).toBe(true);
  });

  it('passes SIGINT, SIGQUIT and SIGHUP only when run is not in the terminal’s foreground; every other signal always', async () => {
    const foreground = await statOf('script', ['-qc', 'cat /proc/self/stat', '/dev/null']);
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
});
