import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/** The first read's size: most files read this way (procfs, state, a lock) are far smaller. */
const FIRST_READ_BYTES = 16 * 1024;

/**
 * A regular file's text, read to at most `maxBytes`: undefined when it is not a regular file (a FIFO
 * or device planted there is opened without blocking, then refused) or is larger. Errors from the
 * file system are thrown for the caller to judge. `flags` adds open flags (O_NOFOLLOW).
 */
export function readBounded(path: string, maxBytes: number, flags = 0): string | undefined {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | flags);
  try {
    return fstatSync(fd).isFile() ? readBoundedFd(fd, maxBytes) : undefined;
  } finally {
    closeSync(fd);
  }
}

/** An open regular file's text from where it stands, to at most `maxBytes`; undefined when larger. The caller closes `fd`. */
export function readBoundedFd(fd: number, maxBytes: number): string | undefined {
  // Read one byte past the limit, whatever fstat said: the file may grow meanwhile, and procfs
  // files say they are empty. The buffer starts small and doubles: a read asking for the whole
  // limit at once is refused by sysctl files (ENOMEM: /proc/sys/kernel/random/boot_id, for a
  // 16 MiB limit) and would allocate the limit for a 37-byte file.
  const limit = maxBytes + 1;
  let buffer = Buffer.allocUnsafe(Math.min(limit, FIRST_READ_BYTES));
  let length = 0;
  for (let n: number; (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0; ) {
    length += n;
    if (length < buffer.length) continue;
    if (buffer.length === limit) break;
    const grown = Buffer.allocUnsafe(Math.min(limit, buffer.length * 2));
    buffer.copy(grown, 0, 0, length);
    buffer = grown;
  }
  return length > maxBytes ? undefined : buffer.toString('utf8', 0, length);
}
