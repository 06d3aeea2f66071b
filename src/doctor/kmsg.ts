import type { FileHandle } from 'node:fs/promises';
import { setImmediate as yieldToTimers } from 'node:timers/promises';
import { hostPath, openIf, unreadable, type Host } from '../host/host.js';
import { isKmsg, READ_CAP_BYTES } from '../xid/kmsg.js';

/** Kernel log kept for the checks: the newest records, up to this much. */
export const KEEP_BYTES = 4 * 1024 * 1024;

/** The kernel's largest record (CONSOLE_EXT_LOG_MAX): one read() returns one record. */
const RECORD_BYTES = 8192;
/** Records read between looks at the deadline. */
const BATCH = 1000;

/**
 * Reads records from a /dev/kmsg descriptor, oldest first, until its end (EAGAIN: the descriptor is
 * non-blocking), READ_CAP_BYTES or the deadline; keeps the newest KEEP_BYTES.
 */
export async function readRecords(
  handle: FileHandle,
  signal: AbortSignal,
  limits = { keep: KEEP_BYTES, readCap: READ_CAP_BYTES },
): Promise<string> {
  const records: string[] = [];
  let first = 0;
  let kept = 0;
  let read = 0;
  const buffer = Buffer.alloc(RECORD_BYTES);
  for (;;) {
    for (let i = 0; i < BATCH; i++) {
      const outcome = await handle.read(buffer, 0, buffer.length, null).then(
        ({ bytesRead }) => bytesRead,
        // EAGAIN: the end of the live log. EPIPE: records overwritten while reading; what was read stands.
        (error: NodeJS.ErrnoException) => (error.code === 'EAGAIN' || error.code === 'EPIPE' ? 0 : Promise.reject(error)),
      );
      if (outcome === 0) return records.slice(first).join('');
      const record = buffer.toString('utf8', 0, outcome);
      records.push(record);
      kept += record.length;
      read += outcome;
      while (kept > limits.keep) kept -= records[first++]!.length;
      if (read >= limits.readCap) return records.slice(first).join('');
    }
    // Records dropped from the front are let go now and then, not one by one.
    if (first > records.length / 2) {
      records.splice(0, first);
      first = 0;
    }
    await yieldToTimers();
    if (signal.aborted) return records.slice(first).join('');
  }
}

/** A regular file standing in for /dev/kmsg (a test tree, a saved log): its last `keep` bytes. */
async function readTail(handle: FileHandle, keep: number): Promise<string> {
  const { size } = await handle.stat();
  const length = Math.min(size, keep);
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, size - length + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.toString('utf8', 0, done);
}

/** /dev/kmsg: the kernel log's newest records; undefined when it cannot be read here (no permission, a container). */
export async function readKernelLog(host: Host, signal: AbortSignal): Promise<string | undefined> {
  const handle = await openIf(hostPath(host, 'dev/kmsg'), isKmsg);
  if (!handle) return undefined;
  try {
    return (await handle.stat()).isFile() ? await readTail(handle, KEEP_BYTES) : await readRecords(handle, signal);
  } catch (error) {
    return unreadable(error);
  } finally {
    await handle.close();
  }
}
