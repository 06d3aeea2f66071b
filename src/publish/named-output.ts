import { realpathSync, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { pinDir, replaceFile } from '../files/safe-fs.js';

// A file the user names on the command line (report --out, run --summary-json) is what
// write-file-atomic is made for: a temp file renamed over it (a reader sees the old file or the new),
// a link the user put at the name followed to its target, an existing file's owner and mode kept.
// But it follows links by resolving the whole path with realpath first: run as root in a directory
// another user can write (a shared /tmp, their home), a link that user planted at the name would
// have root's rename land on its target (/etc/shadow). So it is used only where nobody else can
// change the directory's entries; anywhere else safe-fs replaces the name and never writes through.

/** Whether only we (or root) can change the entries of a directory: owned by our uid or root, writable by neither group nor others. */
export const isTrustedDir = (info: { uid: number; mode: number }, euid: number): boolean =>
  (info.uid === euid || info.uid === 0) && (info.mode & 0o022) === 0;

/**
 * Writes `text` to the file at `path`, whole or not at all, creating its directory (safe-fs). In a
 * directory others can change: safe-fs's replaceFile (mode 0644), which replaces a link at the name,
 * never its target. In a trusted one: the user's link followed, and write-file-atomic where it
 * leads (replaceFile again if that lies in a directory others can change). Throws the file error
 * (isFileError) when it cannot.
 */
export function writeNamedOutput(path: string, text: string, euid = process.geteuid?.() ?? -1): void {
  const asked = resolve(path);
  const askedDir = pinDir(dirname(asked), { create: true });
  try {
    // Stat through the pinned descriptor: the directory opened, not whatever the path names now.
    if (!isTrustedDir(statSync(askedDir.fdPath), euid)) {
      replaceFile(askedDir, basename(asked), text);
      return;
    }
  } finally {
    askedDir.close();
  }
  // Nobody else can change the name: a link there is the user's own, and leads where they meant.
  const target = realTarget(asked);
  const targetDir = pinDir(dirname(target));
  try {
    if (isTrustedDir(statSync(targetDir.fdPath), euid)) writeFileAtomic.sync(target, text);
    // The user's link leads into a directory others can change: its last name, replaced there.
    else replaceFile(targetDir, basename(target), text);
  } finally {
    targetDir.close();
  }
}

/** Where `path` leads: its realpath, or `path` itself when there is nothing there yet. */
function realTarget(path: string): string {
  try {
    return realpathSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT') return path;
    throw error;
  }
}
