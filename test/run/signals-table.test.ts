import { constants } from 'node:os';
import { describe, expect, it } from 'vitest';
import { IGNORED_SIGNALS, LEFT_SIGNALS, PASSED_SIGNALS } from '../../src/run/signals.js';

// Every signal is in exactly one of run's two tables (src/run/signals.ts): a signal added to neither
// would end run by its default action, under its job. The default actions are signal(7)'s.

/** signal(7): the signals whose default action ends the process ("Term" or "Core"). */
const ENDS_BY_DEFAULT = [
  'SIGABRT',
  'SIGALRM',
  'SIGBUS',
  'SIGFPE',
  'SIGHUP',
  'SIGILL',
  'SIGINT',
  'SIGIO',
  'SIGKILL',
  'SIGPIPE',
  'SIGPOLL',
  'SIGPROF',
  'SIGPWR',
  'SIGQUIT',
  'SIGSEGV',
  'SIGSTKFLT',
  'SIGSYS',
  'SIGTERM',
  'SIGTRAP',
  'SIGUSR1',
  'SIGUSR2',
  'SIGVTALRM',
  'SIGXCPU',
  'SIGXFSZ',
];

// By number: SIGPOLL is SIGIO on Linux; a number listened to under two names would be passed twice.
const numberOf = (name: string) => constants.signals[name as NodeJS.Signals];
const passed = PASSED_SIGNALS.map((p) => numberOf(p.signal));
const left = [...LEFT_SIGNALS, ...IGNORED_SIGNALS].flatMap((l) => l.signals.map(numberOf));

describe("run's signal tables", () => {
  it('name each signal once, each with a reason', () => {
    const all = [...passed, ...left];
    expect(all.length).toBe(new Set(all).size);
    for (const entry of [...PASSED_SIGNALS, ...LEFT_SIGNALS, ...IGNORED_SIGNALS]) expect(entry.why.length).toBeGreaterThan(10);
  });

  it.each(ENDS_BY_DEFAULT.filter((name) => name in constants.signals))('%s, which ends a process by default, is in one of them', (name) => {
    expect([...passed, ...left]).toContain(numberOf(name));
  });

  // Limits and traps sent to run stand for the job's: left to end run, they orphaned the job.
  it.each(['SIGXCPU', 'SIGTRAP', 'SIGSYS', 'SIGXFSZ'])('%s is not left to end run', (name) => {
    expect(LEFT_SIGNALS.flatMap((l) => l.signals)).not.toContain(name);
  });
});
