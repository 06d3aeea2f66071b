// What bench/run.mjs and bench/nvml.mjs read of a live process from /proc.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';

/** CPU seconds of a live process, all its threads: schedstat's nanoseconds, not stat's 10 ms ticks. */
export const cpuOf = (pid) =>
  readdirSync(`/proc/${pid}/task`).reduce(
    (sum, task) => sum + Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]) / 1e9,
    0,
  );
/** Resident memory of a live process, in MiB. */
export const rssOf = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
/** The pids of a live process's children, over all its threads. */
export const childrenOf = (pid) =>
  readdirSync(`/proc/${pid}/task`).flatMap((task) =>
    readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
  );

/** Counts the times `file` is replaced (a new inode: one published sample), polling every 20 ms. */
export function watchReplacements(file) {
  let replaced = 0;
  let inode = statSync(file).ino;
  const timer = setInterval(() => {
    const now = existsSync(file) ? statSync(file).ino : 0;
    if (now !== inode) replaced++;
    inode = now;
  }, 20);
  return { count: () => replaced, stop: () => clearInterval(timer) };
}
