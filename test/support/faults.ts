import { FILE_STEPS, type FileSteps } from '../../src/files/file-steps.js';
import { rmSync } from 'node:fs';
import { fillLeaving } from './small-tmpfs.js';

/**
 * The ways a write step fails, injected at one step of a write path at a time (issue 22):
 * - `full`: the file system really fills up just before the step (a tmpfs, filled to the last byte),
 *   and the real call runs; a step that needs no new space (fsync, link, truncate, unlink on tmpfs)
 *   then succeeds, and the rows must be as safe as when it fails;
 * - `read-only`: the step and every faulty step after it fail with EROFS, as when the kernel remounts a
 *   file system read-only after an error (errors=remount-ro), which it does with files open for writing;
 * - `throws`: only that one call fails, with EIO.
 */
export type FaultKind = 'full' | 'read-only' | 'throws';
export const FAULT_KINDS: readonly FaultKind[] = ['full', 'read-only', 'throws'];

const errno = (code: string, what: string): NodeJS.ErrnoException =>
  Object.assign(new Error(`${code}: injected at ${what}`), { code, errno: code === 'EROFS' ? -30 : -5, syscall: what });

/** A fault of one kind, armed at one step, on the file system mounted at `disk` (for `full`). */
export class Fault {
  /** Whether the fault has fired (a `full` disk counts once filled, even if the real call then succeeds). */
  fired = false;
  private filler: string | undefined;

  constructor(
    readonly kind: FaultKind,
    private readonly disk: string,
  ) {}

  private readonly calls = new Map<string, number>();

  /**
   * Runs `real` as step `name` would with this fault armed at `armedAt` (a step's name, or `name#n` for
   * its n-th call, counting from 1); a read-only file system then fails every later step too.
   */
  step<T>(name: string, armedAt: string, real: () => T): T {
    const nth = (this.calls.get(name) ?? 0) + 1;
    this.calls.set(name, nth);
    if ((armedAt === name || armedAt === `${name}#${nth}`) && !this.fired) {
      this.fired = true;
      if (this.kind === 'full') this.filler = fillLeaving(this.disk, 0);
      else throw errno(this.kind === 'read-only' ? 'EROFS' : 'EIO', name);
    } else if (this.fired && this.kind === 'read-only') throw errno('EROFS', name);
    return real();
  }

  /** The file system as it was: the filler removed (a `read-only` fault is lifted by the next run, which passes no fault). */
  heal(): void {
    // force: two faults armed on one disk share its filler.
    if (this.filler !== undefined) rmSync(this.filler, { force: true });
    this.filler = undefined;
  }
}

/** FileSteps (src/files/file-steps.ts) with `fault` armed at `armedAt`. */
export const faultySteps = (fault: Fault, armedAt: string): FileSteps => ({
  write: (fd, bytes, offset, length) => fault.step('write', armedAt, () => FILE_STEPS.write(fd, bytes, offset, length)),
  // A text's first write is a write like any other: counted and armed under the same name.
  writeText: (fd, text) => fault.step('write', armedAt, () => FILE_STEPS.writeText(fd, text)),
  chmod: (fd, mode) => fault.step('chmod', armedAt, () => FILE_STEPS.chmod(fd, mode)),
  fsync: (fd) => fault.step('fsync', armedAt, () => FILE_STEPS.fsync(fd)),
  truncate: (fd, length) => fault.step('truncate', armedAt, () => FILE_STEPS.truncate(fd, length)),
  rename: (from, to) => fault.step('rename', armedAt, () => FILE_STEPS.rename(from, to)),
  link: (from, to) => fault.step('link', armedAt, () => FILE_STEPS.link(from, to)),
  unlink: (path) => fault.step('unlink', armedAt, () => FILE_STEPS.unlink(path)),
});

/**
 * The real steps with `write` replaced, and a text's first write (writeText) made through it too, as
 * all of the text's bytes from offset 0: a fake write sees every write of the path it fakes.
 */
export const stepsWithWrite = (write: FileSteps['write'], more: Partial<FileSteps> = {}): FileSteps => ({
  ...FILE_STEPS,
  write,
  writeText: (fd, text) => {
    const bytes = Buffer.from(text);
    return write(fd, bytes, 0, bytes.length);
  },
  ...more,
});
