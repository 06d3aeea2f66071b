import { spawn } from 'node:child_process';

// nvidia-smi runs in a process group of its own (so a deadline reaches its children too), which
// also means nothing kills it when gpu-textfile itself is killed: a SIGKILLed collect would leave a
// hung nvidia-smi running for ever, and a hung -lms child never writes, so SIGPIPE never comes.
// The guard is a tiny sh beside it that reads a pipe from us: the kernel closes the pipe when we
// die, however we die, and the guard then SIGKILLs the group at once. When we are done with the
// child we write "done" first, so a finished group is never signalled (its id may be reused).
// A sh, not coreutils `timeout`: it also covers the -lms child, which has no deadline; it acts at
// once instead of at the deadline; and nvidia-smi stays our direct child, so its exit status and
// a missing binary (ENOENT) reach us as before. It ignores the signals a terminal or a unit's stop
// sends (it has its own session): only the pipe decides.
// The guard starts before the child and learns its group from the pipe, written in the same tick as
// the spawn returns: were it started after, a gpu-textfile killed while the guard's own fork ran
// would leave the child unguarded (a busy machine's fork takes milliseconds). One fork more before
// nvidia-smi starts (under a millisecond) is the price.
// (dash's kill takes neither `--` nor `-s KILL` before a negative pid; `-9 -PGID` works in every sh.)
const GUARD = `trap '' HUP INT TERM QUIT
read -r pgid || exit 0
read -r line
if [ "$line" != done ] && [ "$pgid" -gt 1 ] 2>/dev/null; then kill -9 "-$pgid" 2>/dev/null; fi`;

/** Lets go of a process group: it is left alone from now on. */
export type ReleaseGroup = () => void;

const ignorable = (error: NodeJS.ErrnoException): void => {
  // EPIPE: the guard is already gone (killed by someone); ENOENT: no /bin/sh, so no guard. Neither
  // may fail a collection: the guard is a backstop, the deadline still holds while we live.
  if (error.code !== 'EPIPE' && error.code !== 'ENOENT') throw error;
};

/** A guard started before its child: `watch` names the child's process group, `release` lets it go. */
export interface GroupGuard {
  watch(pgid: number | undefined): void;
  release: ReleaseGroup;
}

/** Starts a guard that SIGKILLs the process group it is told to watch if this process dies before releasing it. */
export function startGuard(): GroupGuard {
  const guard = spawn('/bin/sh', ['-c', GUARD], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  guard.on('error', ignorable);
  guard.stdin.on('error', ignorable);
  // Neither the guard nor its pipe may keep this process alive.
  guard.unref();
  (guard.stdin as unknown as { unref(): void }).unref();
  let watching = false;
  return {
    watch: (pgid) => {
      watching = true;
      guard.stdin.write(`${pgid ?? 0}\n`);
    },
    release: () => guard.stdin.end(watching ? 'done\n' : '0\ndone\n'),
  };
}
