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
// (dash's kill takes neither `--` nor `-s KILL` before a negative pid; `-9 -PGID` works in every sh.)
const GUARD = `trap '' HUP INT TERM QUIT; read -r line; [ "$line" = done ] || kill -9 "-$1" 2>/dev/null`;

/** Lets go of a process group: it is left alone from now on. */
export type ReleaseGroup = () => void;

const ignorable = (error: NodeJS.ErrnoException): void => {
  // EPIPE: the guard is already gone (killed by someone); ENOENT: no /bin/sh, so no guard. Neither
  // may fail a collection: the guard is a backstop, the deadline still holds while we live.
  if (error.code !== 'EPIPE' && error.code !== 'ENOENT') throw error;
};

/** Starts a guard that SIGKILLs process group `pgid` if this process dies before releasing it. */
export function guardGroup(pgid: number): ReleaseGroup {
  const guard = spawn('/bin/sh', ['-c', GUARD, 'sh', String(pgid)], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  guard.on('error', ignorable);
  guard.stdin.on('error', ignorable);
  // Neither the guard nor its pipe may keep this process alive.
  guard.unref();
  (guard.stdin as unknown as { unref(): void }).unref();
  return () => guard.stdin.end('done\n');
}
