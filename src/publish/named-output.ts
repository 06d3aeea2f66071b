import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fsyncSync,
  lstatSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  type Stats,
} from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { openTemp, pinDir, replaceFile, tempName, writeAll } from '../files/safe-fs.js';

// A file the user names on the command line (report --out, run --summary-json) is what
// write-file-atomic is made for: a temp file renamed over it (a reader sees the old file or the new),
// a link the user put at the name followed to its target, an existing file's owner and mode kept.
// But it goes by path, resolving it with realpath first and renaming by name after: run as root, a
// link another user planted at the name, or a directory of the path they swapped for a link between
// the two, would have root's rename land where they chose (/etc/shadow). So it is used only where no
// other user can change any directory of the path (then nothing can move under us); anywhere else
// safe-fs replaces the name in its pinned directory and never writes through a link.

/** Whether only we (or root) can change the entries of a directory: owned by our uid or root, writable by neither group nor others. */
export const isTrustedDir = (info: { uid: number; mode: number }, euid: number): boolean =>
  (info.uid === euid || info.uid === 0) && (info.mode & 0o022) === 0;

const STICKY = 0o1000;

/**
 * Whether no other user can change what `dir` (a real path: no links in it) leads to: `dir` is
 * trusted, and so is each directory above it, or that directory is root's and sticky (/tmp) and
 * the entry below it ours or root's, which nobody else may then rename or replace.
 */
export function isStablePath(dir: string, euid: number, stat: (path: string) => Stats = lstatSync): boolean {
  let child = stat(dir);
  if (!child.isDirectory() || !isTrustedDir(child, euid)) return false;
  for (let path = dir; dirname(path) !== path; path = dirname(path)) {
    const parent = stat(dirname(path));
    const ours = (uid: number) => uid === 0 || uid === euid;
    const sticky = (parent.mode & STICKY) !== 0 && ours(parent.uid) && ours(child.uid);
    if (!parent.isDirectory() || !(isTrustedDir(parent, euid) || sticky)) return false;
    child = parent;
  }
  return true;
}

/**
 * Writes `text` (or its pieces, in order) to the file at `path`, whole or not at all, creating its directory (safe-fs). Where
 * no other user can change the path (its directory and, through any link the user made there, the
 * target's): write-file-atomic, the link followed, owner and mode kept; a character device there
 * (/dev/null, a terminal) written into instead. Anywhere else: safe-fs's
 * replaceFile (mode 0644) in the name's pinned directory, which replaces a link at the name and
 * never writes through it. Throws the file error (isFileError) when it cannot.
 */
export function writeNamedOutput(path: string, text: string | Iterable<string>, euid = process.geteuid?.() ?? -1): void {
  const asked = resolve(path);
  const askedDir = pinDir(dirname(asked), { create: true });
  try {
    const target = realTarget(asked);
    if (isStablePath(realpathSync(dirname(asked)), euid) && isStablePath(dirname(target), euid)) {
      // A device (/dev/null, a terminal) is written into: replaced, root's /dev/null would become a file.
      if (statSync(target, { throwIfNoEntry: false })?.isCharacterDevice()) writeIntoDevice(target, text);
      else if (typeof text === 'string') writeFileAtomic.sync(target, text);
      else writePiecesKeepingOwner(target, text, euid);
      return;
    }
    replaceFile(askedDir, basename(asked), text);
  } finally {
    askedDir.close();
  }
}

/**
 * writeNamedOutput for a text that comes in pieces as they are read (export's, from a trail far
 * larger than memory): the same choice of how, the same guarantees, each piece written as it comes.
 * The temp file is opened in the pinned directory where no stable path allows following a link.
 */
export async function writeNamedOutputStream(path: string, pieces: AsyncIterable<string>, euid = process.geteuid?.() ?? -1): Promise<void> {
  const asked = resolve(path);
  const askedDir = pinDir(dirname(asked), { create: true });
  try {
    const target = realTarget(asked);
    const stable = isStablePath(realpathSync(dirname(asked)), euid) && isStablePath(dirname(target), euid);
    if (stable && statSync(target, { throwIfNoEntry: false })?.isCharacterDevice()) {
      const fd = openSync(target, constants.O_WRONLY | constants.O_NOCTTY);
      try {
        for await (const piece of pieces) writeAll(fd, piece);
      } finally {
        closeSync(fd);
      }
      return;
    }
    const targetDir = stable ? pinDir(dirname(target)) : askedDir;
    const name = stable ? basename(target) : basename(asked);
    try {
      const replaced = stable ? statSync(target, { throwIfNoEntry: false }) : undefined;
      const { temp, fd } = openTemp(targetDir, name, stable ? 0o666 : 0o644);
      try {
        try {
          for await (const piece of pieces) writeAll(fd, piece);
          if (replaced) {
            keepOwner(fd, replaced, euid);
            fchmodSync(fd, replaced.mode & 0o7777);
          } else if (!stable) fchmodSync(fd, 0o644);
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
        renameSync(targetDir.at(temp), targetDir.at(name));
      } catch (error) {
        rmSync(targetDir.at(temp), { force: true });
        throw error;
      }
    } finally {
      if (targetDir !== askedDir) targetDir.close();
    }
  } finally {
    askedDir.close();
  }
}

/** The text written into a character device, as a shell's `>` would (no temp file, no rename). */
function writeIntoDevice(target: string, text: string | Iterable<string>): void {
  const fd = openSync(target, constants.O_WRONLY | constants.O_NOCTTY);
  try {
    for (const piece of typeof text === 'string' ? [text] : text) writeAll(fd, piece);
  } finally {
    closeSync(fd);
  }
}

/**
 * What write-file-atomic does, for a text made a piece at a time: it takes the whole text at once,
 * and a year's report by hour is 27 MB, which it would hold as a string and again as bytes. For a
 * stable path only (nothing there can move under us, so names are safe): a temp file beside the
 * target, every piece written whole (writeAll), the replaced file's mode and owner kept (a new file
 * gets 0666 less the umask), fsync, then the rename; the temp removed on failure.
 */
function writePiecesKeepingOwner(target: string, pieces: Iterable<string>, euid: number): void {
  const replaced = statSync(target, { throwIfNoEntry: false });
  const temp = join(dirname(target), tempName(basename(target)));
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
  const fd = openSync(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666);
  try {
    try {
      for (const piece of pieces) writeAll(fd, piece);
      if (replaced) {
        keepOwner(fd, replaced, euid);
        fchmodSync(fd, replaced.mode & 0o7777);
      }
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, target);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * The replaced file's owner and group on the new one, as write-file-atomic tries whoever runs it: a
 * user may give their file any group of theirs (a team's report stays the team's); what the user may
 * not do (another's file, a group not theirs) is left as it is, as there. Root's failure is an error.
 */
function keepOwner(fd: number, replaced: { uid: number; gid: number }, euid: number): void {
  try {
    fchownSync(fd, replaced.uid, replaced.gid);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!(code === 'ENOSYS' || (euid !== 0 && (code === 'EPERM' || code === 'EINVAL')))) throw error;
  }
}

/** Where `path` leads: its realpath, or its directory's realpath and its name when nothing is there yet. */
function realTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT') return resolve(realpathSync(dirname(path)), basename(path));
    throw error;
  }
}
