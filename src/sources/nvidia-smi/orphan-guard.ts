// nvidia-smi runs in a process group of its own (so a deadline reaches its children too), which
// also means nothing kills it when gpu-textfile itself is killed: a SIGKILLed collect would leave a
// hung nvidia-smi running for ever, and a hung -lms child never writes, so SIGPIPE never comes.
//
// So each child guards itself. It is started as a sh (GUARDED) whose stdin is a pipe from us; that
// sh forks a guard, a subshell that reads the pipe, then execs nvidia-smi (same pid, same group, its
// exit status and a missing binary reaching us as before). The kernel closes the pipe when we die,
// however we die: the guard reads EOF and SIGKILLs the group at once. We close the pipe ourselves
// once nvidia-smi has exited; the guard then kills what is left of the group, itself at least (and
// a child nvidia-smi left holding our pipes open, which would keep us from their EOF).
// - The guard is a member of the group it kills: a group's id is not reused while a member lives, so
//   it can never signal someone else's group (the reason a separate guard had to be told to let go).
// - It is forked before nvidia-smi runs: gpu-textfile killed at any moment, even before the spawn
//   returned (issue 33's race: the group's id was known to a separate guard only after the child ran),
//   leaves a guard that reads EOF and kills nvidia-smi, or the sh before it runs anything.
// - It ignores the signals a terminal or a unit's stop sends (it has its own session, and a deadline's
//   SIGTERM is for nvidia-smi): only the pipe decides. A deadline's SIGKILL ends it with the group.
// - Its output goes nowhere: our pipes from nvidia-smi close when nvidia-smi ends, not when it does.
// Before (issue 41), a separate sh guarded the group and each child waited at a gate for its "go":
// a process more to start, a few ms of the one-shot's start on an H200 host.
// (dash's kill takes neither `--` nor `-s KILL` before a negative pid; `-9 -PGID` works in every sh.
// A background job's stdin is /dev/null in a sh without job control, so the guard reads the pipe as
// fd 3, and nvidia-smi gets neither: /dev/null is its stdin.)
const GUARDED = `exec 3<&0
( trap '' HUP INT TERM QUIT; while read -r _; do :; done; kill -9 -$$ ) <&3 >/dev/null 2>&1 &
exec "$0" "$@" </dev/null 3<&-`;

/** How to start `command args` guarded: the file and arguments to spawn, detached, with a pipe as its stdin. */
export const guarded = (command: string, args: readonly string[]): [string, string[]] => ['/bin/sh', ['-c', GUARDED, command, ...args]];

const ignorable = (error: NodeJS.ErrnoException): void => {
  // EPIPE: the guard is already gone (killed with the group by a deadline, or by someone).
  if (error.code !== 'EPIPE') throw error;
};

/** Lets the guard go once nvidia-smi has exited: it reads EOF and kills what is left of the group. */
export function endGuard(stdin: NodeJS.WritableStream | null | undefined): void {
  stdin?.on('error', ignorable);
  stdin?.end();
}

/** The sh's own exit statuses when the command could not be run (POSIX: 127 not found, 126 not executable). */
export const SH_NOT_FOUND = 127;
export const SH_NOT_EXECUTABLE = 126;
