import { closeSync, constants, openSync, readSync } from 'node:fs';

/**
 * Eight random bytes as hex, read from the kernel's generator (a read of up to 256 bytes from
 * /dev/urandom is never short): loading node:crypto for them cost each one-shot run 5 ms on the H200
 * host. Where /dev/urandom cannot be opened (a bare chroot), node:crypto gives them.
 */
export function randomHex(): string {
  const bytes = Buffer.alloc(8);
  let fd: number;
  try {
    fd = openSync('/dev/urandom', constants.O_RDONLY);
  } catch (error) {
    if (typeof (error as NodeJS.ErrnoException).code !== 'string') throw error;
    return process.getBuiltinModule('node:crypto').randomBytes(8).toString('hex');
  }
  try {
    // An errno-like error: callers report it as a failed write, as any other, never as a crash.
    if (readSync(fd, bytes, 0, bytes.length, null) !== bytes.length)
      throw Object.assign(new Error('/dev/urandom gave a short read'), { code: 'EIO' });
  } finally {
    closeSync(fd);
  }
  return bytes.toString('hex');
}
