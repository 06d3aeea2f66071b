import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import { readBoundedFd } from '../files/bounded-read.js';
import { isFileError, UnsafeFileError, type PinnedDir } from '../files/safe-fs.js';
import { sidecarName } from './paths.js';

/**
 * An archive's sidecar: `NAME-YYYYMMDD[-N].csv.hours.json` beside `NAME-YYYYMMDD[-N].csv[.gz]`,
 * written by the archiver once the archive is final. A versioned document of named sections, each
 * a part of the report's per-hour state of the archive's rows (`hours`: src/report/segment.ts), and
 * the identity of the archive it was made from (size, modification time, SHA-256): a reader uses
 * it only while the archive still matches, and reads the rows otherwise. This module knows the
 * envelope; what a section holds is its owner's business (docs/csv.md: adding a section).
 */

export const SIDECAR_FORMAT = 'gpu-textfile-sidecar';
/** The envelope's version; a section carries its own. */
export const SIDECAR_VERSION = 1;

/** The archive a sidecar was made from, as it was then. */
export interface ArchiveIdentity {
  file: string;
  bytes: number;
  mtime_ms: number;
  sha256: string;
}

/** A sidecar's named sections (plain JSON data). */
export type Sections = Record<string, unknown>;

/** Bytes read per step while hashing. */
const CHUNK = 1 << 20;
/** The largest sidecar read (a day of 8 GPUs is tens of KB): anything larger is not ours. */
const MAX_SIDECAR_BYTES = 16 << 20;

/** The SHA-256 of an open file's first `limit` bytes (all of it, when given none). */
function sha256Of(fd: number, limit = Infinity): string {
  const hash = createHash('sha256');
  const buffer = Buffer.allocUnsafe(CHUNK);
  for (
    let position = 0, n: number;
    position < limit && (n = readSync(fd, buffer, 0, Math.min(CHUNK, limit - position), position)) > 0;
    position += n
  )
    hash.update(buffer.subarray(0, n));
  return hash.digest('hex');
}

const identityOf = (file: string, info: Stats, sha256: string): ArchiveIdentity => ({
  file,
  bytes: info.size,
  mtime_ms: info.mtimeMs,
  sha256,
});

/**
 * Archive NAME in a pinned directory, opened for reading without following a link (a regular file
 * only; one with more links, a backup's hard link, reads as well), and its identity. The caller
 * reads it through `/proc/self/fd/<fd>` (the file opened, whatever NAME is by then) and closes it.
 */
export function openArchive(dir: PinnedDir, name: string): { fd: number; identity: ArchiveIdentity } {
  let fd: number;
  try {
    fd = openSync(dir.at(name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP')
      throw new UnsafeFileError(`${dir.path}/${name} is a symbolic link; not read`, 'ELINK');
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) throw new UnsafeFileError(`${dir.path}/${name} is not a regular file; not read`, 'ENOTREG');
    return { fd, identity: identityOf(name, info, sha256Of(fd)) };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** The SHA-256 of an open archive now (to tell whether it changed while it was read). */
export const sha256Now = (fd: number): string => sha256Of(fd);

/** The sidecar's text for an archive. */
export const sidecarText = (identity: ArchiveIdentity, sections: Sections): string =>
  `${JSON.stringify({ format: SIDECAR_FORMAT, version: SIDECAR_VERSION, archive: identity, sections })}\n`;

/** Why a sidecar was not used, for `report`'s JSON; the archive's rows were read instead. */
export type SidecarMiss = 'none' | 'unreadable' | 'not-json' | 'unknown-version' | 'other-archive' | 'archive-changed';

/** The sidecar parsed, and whether it names this archive; undefined when there is none or it cannot be read. */
function parseSidecar(text: string, archive: string): { sections: Sections; identity: ArchiveIdentity } | SidecarMiss {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (error) {
    if (error instanceof SyntaxError) return 'not-json';
    throw error;
  }
  const d = doc as { format?: unknown; version?: unknown; archive?: Partial<ArchiveIdentity>; sections?: unknown } | null;
  if (typeof d !== 'object' || d === null || d.format !== SIDECAR_FORMAT || d.version !== SIDECAR_VERSION) return 'unknown-version';
  const a = d.archive;
  if (
    typeof a !== 'object' ||
    a === null ||
    a.file !== archive ||
    typeof a.bytes !== 'number' ||
    typeof a.mtime_ms !== 'number' ||
    typeof a.sha256 !== 'string' ||
    typeof d.sections !== 'object' ||
    d.sections === null
  )
    return 'other-archive';
  return { sections: d.sections as Sections, identity: a as ArchiveIdentity };
}

/** A regular file NAME in DIR, opened without following a link or blocking on a FIFO, with its status; undefined when it is something else. */
function openRegular(dir: string, name: string): { fd: number; info: Stats } | undefined {
  const fd = openSync(join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  const info = fstatSync(fd);
  if (info.isFile()) return { fd, info };
  closeSync(fd);
  return undefined;
}

/**
 * The sections of the sidecar of `archive` in `dir`, if it describes the archive as it is now:
 * same size and modification time (as rsync's quick check), or, when only the time differs (a copy
 * that did not keep it), the same SHA-256 of as many bytes as the sidecar says. Otherwise why not:
 * the caller reads the rows. Neither file is read through a link or when it is not a regular file
 * (a link to /dev/zero would be hashed for ever), and the sidecar must belong to the archive's
 * owner: in a directory others may write but not rename in (the sticky bit), someone who cannot
 * change an archive must not be able to plant a sidecar that tells the report other numbers.
 */
export function readSidecar(dir: string, archive: string): Sections | SidecarMiss {
  let sidecarFile: { fd: number; info: Stats } | undefined;
  let archiveFile: { fd: number; info: Stats } | undefined;
  try {
    sidecarFile = openRegular(dir, sidecarName(archive));
    if (sidecarFile === undefined) return 'unreadable';
    const text = readBoundedFd(sidecarFile.fd, MAX_SIDECAR_BYTES);
    archiveFile = openRegular(dir, archive);
    if (text === undefined || archiveFile === undefined || sidecarFile.info.uid !== archiveFile.info.uid) return 'unreadable';
    const sidecar = parseSidecar(text, archive);
    if (typeof sidecar === 'string') return sidecar;
    const { identity } = sidecar;
    const info = archiveFile.info;
    if (identity.bytes !== info.size) return 'archive-changed';
    if (identity.mtime_ms === info.mtimeMs) return sidecar.sections;
    return sha256Of(archiveFile.fd, identity.bytes + 1) === identity.sha256 ? sidecar.sections : 'archive-changed';
  } catch (error) {
    if (!isFileError(error)) throw error;
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'none' : 'unreadable';
  } finally {
    if (sidecarFile) closeSync(sidecarFile.fd);
    if (archiveFile) closeSync(archiveFile.fd);
  }
}
