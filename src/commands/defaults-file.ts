import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import { parseEnvironmentFile } from '../deploy/units.js';

// Every command's defaults come from /etc/default/gpu-textfile, the file the packages ship and install
// writes, so that `gpu-textfile report` on a packaged host finds the CSV trail the units write. The
// order: the command line, then the environment, then this file, then the option table's defaults.

/** The file the units' EnvironmentFile= names. */
export const DEFAULTS_FILE = '/etc/default/gpu-textfile';
/** Names another file instead (tests), or none when empty: the units set it empty, having given the file already. */
export const DEFAULTS_FILE_VARIABLE = 'GPU_TEXTFILE_DEFAULTS_FILE';
/** Far above any real file (install writes a few hundred bytes); a larger one is not ours. */
const MAX_BYTES = 64 * 1024;

/** Who may own the file, or a link on the way to it: root, or the user running the command. */
const trusted = (uid: number, euid: number) => uid === 0 || uid === euid;

/**
 * The GPU_TEXTFILE_* settings of the defaults file at `path`, as the units' EnvironmentFile= reads
 * them (plain NAME=value assignments; other lines pass over), or the one line that says why it is
 * not read. A missing file, or one this user may not read, sets nothing. Refused: a link owned by another user (fs.protected_symlinks'
 * rule), anything but a regular file, a file owned by another user or writable by everyone, one past
 * 64 KiB.
 */
export function readDefaultsFile(path: string, euid: number): Record<string, string> | string {
  let link: ReturnType<typeof lstatSync>;
  try {
    link = lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') return {};
    throw error;
  }
  if (link.isSymbolicLink() && !trusted(link.uid, euid)) return `${path}: a link owned by user ${link.uid}; not read`;
  let fd: number;
  try {
    // O_NONBLOCK: a FIFO planted there must not hang the command before fstat refuses it.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Not readable by this user (an admin made it 0600): the defaults are root's units', and a user's
    // `pulse` or `report --csv-dir D` must not fail over a file it cannot read; it runs without them.
    if (code === 'ENOENT' || code === 'EACCES') return {};
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return `${path}: not a regular file; not read`;
    if (!trusted(stat.uid, euid)) return `${path}: owned by user ${stat.uid}, not by root or you; not read`;
    if ((stat.mode & 0o002) !== 0) return `${path}: writable by every user; not read`;
    const buffer = Buffer.alloc(MAX_BYTES + 1);
    let length = 0;
    for (let read = -1; read !== 0 && length < buffer.length; length += read)
      read = readSync(fd, buffer, length, buffer.length - length, null);
    if (length > MAX_BYTES) return `${path}: larger than ${MAX_BYTES} bytes; not read`;
    const settings = parseEnvironmentFile(buffer.subarray(0, length).toString('utf8'));
    return Object.fromEntries([...settings].filter(([name]) => name.startsWith('GPU_TEXTFILE_') && name !== DEFAULTS_FILE_VARIABLE));
  } finally {
    closeSync(fd);
  }
}

/**
 * The file's settings that are the units' collector's alone, not defaults for `command`. The daemon
 * service's cadence (GPU_TEXTFILE_INTERVAL, as docs/collect.md has it set there) is no command's:
 * the timer's service unsets it too, or `collect` by hand would never return. The collector's task
 * and file name are collect's alone: taken by `run` they would make every job's textfile and rows
 * the collector's (two writers of one file), taken by `report` and `export` (their --task) they
 * would show that one task and leave out every other in the trail. The collector's labels are not
 * export's --label (the scrape's): they hold the `task=NAME` docs/fleet.md has the collector set,
 * which export writes itself and refuses in --label.
 */
const collectorOnly = (command: string | undefined): readonly string[] => {
  if (command === 'collect') return ['GPU_TEXTFILE_INTERVAL'];
  const own = ['GPU_TEXTFILE_INTERVAL', 'GPU_TEXTFILE_TASK', 'GPU_TEXTFILE_FILE_NAME'];
  return command === 'export' ? [...own, 'GPU_TEXTFILE_LABEL'] : own;
};

/**
 * The environment `command`'s options are read from: `env` over the defaults file's settings (the
 * one `env` names, or /etc/default/gpu-textfile) less those that are not its defaults, or the one
 * line that says why that file is refused.
 */
export function withDefaultsFile(env: NodeJS.ProcessEnv, euid: number, command?: string): NodeJS.ProcessEnv | string {
  const path = env[DEFAULTS_FILE_VARIABLE] ?? DEFAULTS_FILE;
  if (path === '') return env;
  const defaults = readDefaultsFile(path, euid);
  if (typeof defaults === 'string') return `${defaults}; set ${DEFAULTS_FILE_VARIABLE}= to read none`;
  const skipped = collectorOnly(command);
  return { ...Object.fromEntries(Object.entries(defaults).filter(([name]) => !skipped.includes(name))), ...env };
}
