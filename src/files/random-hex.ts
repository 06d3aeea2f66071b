import { closeSync, constants, openSync, readSync } from 'node:fs';

/** Bytes read from the kernel's generator at a time: 32 names; a read of up to 256 bytes is never short. */
const POOL_BYTES = 256;
const NAME_BYTES = 8;

/**
 * Random bytes, read from the kernel's generator POOL_BYTES at a time and handed out NAME_BYTES at a
 * time: loading node:crypto for them cost each one-shot run 5 ms on the H200 host, and opening
 * /dev/urandom for every temp name three system calls of every daemon sample. Where /dev/urandom
 * cannot be opened (a bare chroot), node:crypto gives them.
 */
function readPool(): Buffer {
  let fd: number;
  try {
    fd = openSync('/dev/urandom', constants.O_RDONLY);
  } catch (error) {
    if (typeof (error as NodeJS.ErrnoException).code !== 'string') throw error;
    return process.getBuiltinModule('node:crypto').randomBytes(POOL_BYTES);
  }
  try {
    const bytes = Buffer.alloc(POOL_BYTES);
    // An errno-like error: callers report it as a failed write, as any other, never as a crash.
    if (readSync(fd, bytes, 0, bytes.length, null) !== bytes.length)
      throw Object.assign(new Error('/dev/urandom gave a short read'), { code: 'EIO' });
    return bytes;
  } finally {
    closeSync(fd);
  }
}

// What is left of the last pool read: each byte handed out once, then the pool is read again.
let pool: Buffer = Buffer.alloc(0);
let used = 0;

/** Eight random bytes as hex, each byte of a pool handed out once. */
export function randomHex(): string {
  if (used + NAME_BYTES > pool.length) {
    pool = readPool();
    used = 0;
  }
  const hex = pool.toString('hex', used, used + NAME_BYTES);
  used += NAME_BYTES;
  return hex;
}
