import { join } from 'node:path';
import { loadKoffi } from '../sources/nvml/koffi.js';

// Real-time signals (SIGRTMIN to SIGRTMAX) end a process by default, and Node.js cannot listen for
// them (os.constants.signals names none): one sent to run alone would end it under its job, orphaned
// with no summary and its textfile left. So run sets them to be ignored, through libc's sigaction
// (koffi, the FFI NVML is called through). Only once the job started: a disposition set to ignore is
// kept across exec, and libuv resets only signals 1 to 31 in the child, so set before the spawn it
// would make the job ignore them too. They cannot be passed on (no handler of ours ever runs); a
// scheduler signalling the job's process group reaches the job directly.

/** SIG_IGN, as sa_handler holds it. */
const SIG_IGN = 1n;
/** struct sigaction on glibc (x86-64 and arm64: sa_handler first, 152 bytes): room to spare, zeroed. */
const SIGACTION_BYTES = 256;

/**
 * Ignores every real-time signal in this process from now on. Returns the range ignored, or why
 * not (no koffi native module for this machine, a libc without glibc's symbols).
 */
export function ignoreRealtimeSignals(koffiDir = join(__dirname, 'koffi')): { first: number; last: number } | { error: string } {
  const koffi = loadKoffi(koffiDir);
  if ('error' in koffi) return koffi;
  try {
    const libc = koffi.load('libc.so.6');
    const sigaction = libc.func('int sigaction(int, void *, void *)');
    const first = libc.func('int __libc_current_sigrtmin(void)')() as number;
    const last = libc.func('int __libc_current_sigrtmax(void)')() as number;
    const ignore = Buffer.alloc(SIGACTION_BYTES);
    ignore.writeBigUInt64LE(SIG_IGN, 0);
    for (let signal = first; signal <= last; signal++)
      if (sigaction(signal, ignore, null) !== 0) return { error: `sigaction(${signal}) failed` };
    return { first, last };
  } catch (error) {
    // dlopen's or dlsym's own words (musl has no libc.so.6 and no __libc_current_sigrtmin).
    if (error instanceof Error) return { error: error.message };
    throw error;
  }
}
