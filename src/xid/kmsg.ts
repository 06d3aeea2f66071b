import { closeSync, fstatSync, readSync, type Stats } from 'node:fs';
import { openIfSync } from '../host/host.js';
import { type KmsgRecord, parseKmsgRecord, parseKmsgRecords } from './parse.js';

/** /dev/kmsg is the character device 1:11 (the kernel's devices.txt); no other device is read in its place. */
export const KMSG_RDEV = (1 << 8) | 11;
/** Read no more than this in one go: the kernel's largest log buffer is 32 MiB (LOG_BUF_SHIFT 25). */
export const READ_CAP_BYTES = 32 * 1024 * 1024;
/** The kernel's largest record (CONSOLE_EXT_LOG_MAX): one read() returns one record. */
const RECORD_BYTES = 8192;

/**
 * What may stand at /dev/kmsg: the kernel log device, or a regular file of its records (a log saved
 * with `dd if=/dev/kmsg iflag=nonblock`, under a --host-root tree). Nothing else is opened: opening
 * some devices has effects of its own, and a FIFO would block.
 */
export const isKmsg = (stats: Stats): boolean => stats.isFile() || (stats.isCharacterDevice() && stats.rdev === KMSG_RDEV);

/** An open kernel log: read() gives the records not read before, oldest first. */
export interface KmsgReader {
  read(): KmsgRecord[];
  close(): void;
}

/** A system call's error (EAGAIN, EPIPE…) while reading the log. Anything else is a bug. */
const isSystemError = (error: unknown): error is NodeJS.ErrnoException =>
  typeof (error as NodeJS.ErrnoException | undefined)?.syscall === 'string';

/**
 * Opens the kernel log at `path` when it is one (see isKmsg; checked before and after open() by the
 * host reader, so no other file is opened by a swap between the two; non-blocking, so at the end of
 * the live log read() says EAGAIN instead of waiting for the next record). Undefined when it is
 * absent, not one, or not permitted (a container without CAP_SYSLOG, kernel.dmesg_restrict for
 * non-root). One read() reads at most `readCap` bytes.
 */
export function openKmsg(path: string, readCap = READ_CAP_BYTES): KmsgReader | undefined {
  const opened = openIfSync(path, isKmsg);
  if (!opened) return undefined;
  return opened.stats.isFile() ? fileReader(opened.fd, readCap) : deviceReader(opened.fd, readCap);
}

/** The device gives one record per read(), from the oldest kept; the descriptor remembers where we are. */
function deviceReader(fd: number, readCap: number): KmsgReader {
  const buffer = Buffer.alloc(RECORD_BYTES);
  return {
    read() {
      const records: KmsgRecord[] = [];
      for (let bytes = 0; bytes < readCap; ) {
        let length: number;
        try {
          length = readSync(fd, buffer, 0, buffer.length, null);
        } catch (error) {
          // EAGAIN: the end of the live log. EPIPE: records were overwritten before we read them; the
          // next read() goes on from the oldest one kept. Other errors end this read.
          if (isSystemError(error) && error.code === 'EPIPE') {
            bytes++;
            continue;
          }
          if (isSystemError(error)) break;
          throw error;
        }
        if (length === 0) break;
        bytes += length;
        // A record's first line holds its header and message; " KEY=value" lines may follow.
        const record = parseKmsgRecord(buffer.toString('utf8', 0, length).split('\n', 1)[0]!);
        if (record) records.push(record);
      }
      return records;
    },
    close: () => closeSync(fd),
  };
}

/** A saved log is read at each read(): its newest `readCap` bytes, whose records are then filtered by sequence number. */
function fileReader(fd: number, readCap: number): KmsgReader {
  return {
    read() {
      const { size } = fstatSync(fd);
      const start = Math.max(0, size - readCap);
      const buffer = Buffer.alloc(size - start);
      let length = 0;
      for (let n: number; length < buffer.length && (n = readSync(fd, buffer, length, buffer.length - length, start + length)) > 0; )
        length += n;
      const text = buffer.toString('utf8', 0, length);
      // Started inside a record: its tail is no record.
      return parseKmsgRecords(start > 0 ? text.slice(text.indexOf('\n') + 1) : text);
    },
    close: () => closeSync(fd),
  };
}
