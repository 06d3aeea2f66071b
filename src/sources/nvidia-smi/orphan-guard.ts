import { spawn } from 'node:child_process';

// nvidia-smi runs in a process group of its own (so a deadline reaches its children too), which
// also means nothing kills it when gpu-textfile itself is killed: a SIGKILLed collect would leave a
// hung nvidia-smi running for ever, and a hung -lms child never writes, so SIGPIPE never comes.
// The guard is a tiny sh beside it that reads a pipe from us: the kernel closes the pipe when we
// die, however we die, and the guard then SIGKILLs the group at once. When we are done with the
// child we tell the guard to let its group go first, so a finished group is never signalled (its id
// may be reused).
// A sh, not coreutils `timeout`: it also covers the -lms child, which has no deadline; it acts at
// once instead of at the deadline; and nvidia-smi stays our direct child, so its exit status and
// a missing binary (ENOENT) reach us as before. It ignores the signals a terminal or a unit's stop
// sends (it has its own session): only the pipe decides.
// The guard starts before the child and learns its group from the pipe: were it started after, a
// gpu-textfile killed while the guard's own fork ran would leave the child unguarded.
// The race that remained (issue 33, seen once in six loaded runs): the group's id is the child's
// pid, known only once the spawn returns, and the child is running by then. A gpu-textfile killed
// between the child's exec and our write of its group (a busy machine deschedules us there for
// milliseconds) left the guard with no group to kill: it exited, and nvidia-smi -lms ran on, silent,
// for ever. So the child is gated: it starts as a sh (GATE) that waits for "go" on its stdin, which
// we send only after the guard has its group, and only then execs nvidia-smi (same pid, same group,
// its exit status ours). Killed before the guard knows the group, we never send "go": the gate
// reads EOF and exits without running nvidia-smi. The price: one sh exec more per nvidia-smi run.
// (dash's kill takes neither `--` nor `-s KILL` before a negative pid; `-9 -PGID` works in every sh.)
// One guard watches every child of a collection that runs at once (the one-shot's --query-gpu and
// --query-compute-apps): each "+PGID" line adds a group, "-PGID" lets it go; at EOF it SIGKILLs the
// groups still watched. A guard is a process to start, a few ms of the one-shot's start on an H200
// host (issue 41): two children, one guard.
const GUARD = `trap '' HUP INT TERM QUIT
watched=' '
while read -r line; do
  group=\${line#?}
  case $line in
    +*) watched="$watched$group " ;;
    -*) case $watched in *" $group "*) watched="\${watched%% $group *} \${watched#* $group }" ;; esac ;;
  esac
done
for group in $watched; do
  if [ "$group" -gt 1 ] 2>/dev/null; then kill -9 "-$group" 2>/dev/null; fi
done
exit 0`;

/** Lets go of a process group: it is left alone from now on. */
export type ReleaseGroup = () => void;

const ignorable = (error: NodeJS.ErrnoException): void => {
  // EPIPE: the guard is already gone (killed by someone); ENOENT: no /bin/sh, so no guard. Neither
  // may fail a collection: the guard is a backstop, the deadline still holds while we live.
  if (error.code !== 'EPIPE' && error.code !== 'ENOENT') throw error;
};

/**
 * Guards for the children that run at once: `guard()` gives one, started before its child (a guard
 * already started while another child of ours still runs, else a new one); `watch` names the child's
 * process group, `release` lets it go. The guard ends once no child it watches is left.
 */
export interface GuardPool {
  guard(): GroupGuard;
}

/** A guard of a pool, for one child. */
export interface GroupGuard {
  watch(pgid: number | undefined): void;
  release: ReleaseGroup;
}

/** A pool of guards: one guard process at a time, shared by the children that run at once. */
export function guardPool(): GuardPool {
  let current: { stdin: NodeJS.WritableStream; children: number } | undefined;
  const start = () => {
    const guard = spawn('/bin/sh', ['-c', GUARD], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    guard.on('error', ignorable);
    guard.stdin.on('error', ignorable);
    // Neither the guard nor its pipe may keep this process alive.
    guard.unref();
    (guard.stdin as unknown as { unref(): void }).unref();
    return { stdin: guard.stdin, children: 0 };
  };
  return {
    guard: () => {
      const shared = current ?? start();
      current = shared;
      shared.children++;
      let watched: number | undefined;
      let released = false;
      return {
        watch: (pgid) => {
          if (pgid === undefined || watched !== undefined) return;
          watched = pgid;
          shared.stdin.write(`+${pgid}\n`);
        },
        release: () => {
          if (released) return;
          released = true;
          if (watched !== undefined) shared.stdin.write(`-${watched}\n`);
          if (--shared.children > 0) return;
          // Its last child done: EOF ends it, with nothing left to kill.
          shared.stdin.end();
          if (current === shared) current = undefined;
        },
      };
    },
  };
}

/** A guard of its own, for a child run alone. */
export const startGuard = (): GroupGuard => guardPool().guard();

/**
 * Waits for "go" on stdin, then execs the command ($0) with its arguments, stdin from /dev/null;
 * EOF first (we died before the guard knew the group) ends it without running anything. A
 * command that cannot be run makes the sh exit 127 (not found) or 126 (not executable).
 */
const GATE = 'read -r go || exit 0; exec "$0" "$@" </dev/null';

/** How to start `command args` gated: the file and arguments to spawn, with a pipe as its stdin. */
export const gated = (command: string, args: readonly string[]): [string, string[]] => ['/bin/sh', ['-c', GATE, command, ...args]];

/** Opens the gate (once the guard watches the child's group): the command runs now. */
export function openGate(stdin: NodeJS.WritableStream | null | undefined): void {
  // EPIPE: the gate is gone (killed by someone); the child's outcome says so.
  stdin?.on('error', ignorable);
  stdin?.end('go\n');
}

/** The sh's own exit statuses when the command could not be run (POSIX: 127 not found, 126 not executable). */
export const GATE_NOT_FOUND = 127;
export const GATE_NOT_EXECUTABLE = 126;
