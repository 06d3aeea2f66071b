import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

/**
 * A regular file's text, read to at most `maxBytes`: undefined when it is not a regular file (a FIFO
 * or device planted there is opened without blocking, then refused) or is larger. Errors from the
 * file system are thrown for the caller to judge. `flags` adds open flags (O_NOFOLLOW).
 */
export function readBounded(path: string, maxBytes: number, flags = 0): string | undefined {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | flags);
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    // Read one byte past the limit, whatever fstat said: the file may grow meanwhile, and procfs
    // files say they are empty.
    const buffer = Buffer.allocUnsafe(maxBytes + 1);
    let length = 0;
    for (let n: number; length < buffer.length && (n = readSync(fd, buffer, length, buffer.length - length, null)) > 0; ) length += n;
    return length > maxBytes ? undefined : buffer.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
}
