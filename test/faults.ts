import { unlinkSync } from 'node:fs';
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

  /**
   * Runs `real` as step `name` would with this fault armed at `armedAt`; `later` marks steps after the
   * armed one that a read-only file system fails too.
   */
  step<T>(name: string, armedAt: string, real: () => T): T {
    if (name === armedAt && !this.fired) {
      this.fired = true;
      if (this.kind === 'full') this.filler = fillLeaving(this.disk, 0);
      else throw errno(this.kind === 'read-only' ? 'EROFS' : 'EIO', name);
    } else if (this.fired && this.kind === 'read-only') throw errno('EROFS', name);
    return real();
  }

  /** The file system as it was: the filler removed (a `read-only` fault is lifted by the next run, which passes no fault). */
  heal(): void {
    if (this.filler !== undefined) unlinkSync(this.filler);
    this.filler = undefined;
  }
}
