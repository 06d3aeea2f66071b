import { copyFile, chmod, lstat, mkdir, mkdtemp, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import { constants, existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Program } from './units.js';

// The program the units run is a copy, not the checkout `npm install -g .` links to: that often sits
// under /root or /home, which the units' ProtectHome=yes hides, and the service could not start.

/** Where install puts the program: `current` is a link to the newest release beside it. */
export const PROGRAM_DIR = '/usr/local/lib/gpu-textfile';
/** What every unit's ExecStart runs. */
export const INSTALLED_SCRIPT = `${PROGRAM_DIR}/current/dist/gpu-textfile.js`;
/**
 * What a release holds: the bundle (self-contained, with its package.json), the unit templates install
 * reads, and the guide the units' Documentation= names; and where install runs from a package with
 * its own Node.js (scripts/package.mjs), that runtime, node/bin/node.
 */
export const RELEASE_PARTS = ['dist', 'systemd', 'docs'] as const;
export const RUNTIME_PART = 'node';

const RELEASE_PREFIX = 'release-';

/** The tarball's launcher (bin/gpu-textfile: runs dist/ with node/ beside it), copied with its own Node.js. */
export const LAUNCHER_PART = 'bin';

/** The parts of the package at `packageRoot` a release copies: its own Node.js and launcher too where it has them. */
export const releaseParts = (packageRoot: string): string[] => [
  ...RELEASE_PARTS,
  ...(existsSync(join(packageRoot, RUNTIME_PART)) ? [RUNTIME_PART] : []),
  ...(existsSync(join(packageRoot, RUNTIME_PART)) && existsSync(join(packageRoot, LAUNCHER_PART, 'gpu-textfile')) ? [LAUNCHER_PART] : []),
];

/**
 * `gpu-textfile` on PATH after a tarball's install: a link to the launcher through `current`, so it
 * follows each install. npm's route needs none (npm links its own bin).
 */
export const COMMAND_LINK = '/usr/local/bin/gpu-textfile';
export const COMMAND_TARGET = `${PROGRAM_DIR}/current/${LAUNCHER_PART}/gpu-textfile`;

/** What is at `link` (COMMAND_LINK under --root): nothing, our link, or something else, which install and uninstall leave alone. */
export async function commandLinkState(link: string): Promise<'absent' | 'ours' | 'other'> {
  const found = await lstat(link).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (!found) return 'absent';
  return found.isSymbolicLink() && (await readlink(link)) === COMMAND_TARGET ? 'ours' : 'other';
}

/** Points `link` at the launcher: a new link renamed over the old one. */
export async function linkCommand(link: string): Promise<void> {
  await mkdir(dirname(link), { recursive: true, mode: 0o755 });
  const next = `${link}.new`;
  await rm(next, { force: true });
  await symlink(COMMAND_TARGET, next);
  await rename(next, link);
}

/**
 * What the units run: the package's own Node.js, from the release, when install runs on it (the
 * tarball's bin/gpu-textfile); else the Node.js running install, as npm's route has it.
 */
export function unitProgram(packageRoot: string, execPath: string): Program {
  const own = join(packageRoot, RUNTIME_PART, 'bin/node');
  const onOwn = existsSync(own) && realpathSync(own) === realpathSync(execPath);
  return { node: onOwn ? `${PROGRAM_DIR}/current/${RUNTIME_PART}/bin/node` : execPath, script: INSTALLED_SCRIPT };
}

/**
 * Copies a directory tree: regular files and directories only. A link is refused, not followed or
 * copied: it could point into /root or /home, where the unit cannot follow it either.
 */
export async function copyTree(from: string, to: string): Promise<void> {
  await mkdir(to, { mode: 0o755 });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    const source = join(from, entry.name);
    if (entry.isDirectory()) await copyTree(source, join(to, entry.name));
    else if (entry.isFile()) {
      await copyFile(source, join(to, entry.name), constants.COPYFILE_EXCL);
      await chmod(join(to, entry.name), (await lstat(source)).mode & 0o755);
    } else throw new Error(`${source} is not a regular file or directory; not copied`);
  }
}

/**
 * Installs the package at `packageRoot` into `dir` (PROGRAM_DIR under --root): each part is copied
 * into a new release directory, then the `current` link is replaced by rename, so a run starting
 * meanwhile finds the old program or the new one, never half of one. The release replaced stays
 * until the next install (a run that started from it may still load its lazily loaded files); older
 * ones are removed.
 */
export async function installProgram(packageRoot: string, dir: string): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const release = await mkdtemp(join(dir, RELEASE_PREFIX));
  await chmod(release, 0o755);
  for (const part of releaseParts(packageRoot)) await copyTree(join(packageRoot, part), join(release, part));
  const link = join(dir, 'current');
  const existing = await lstat(link).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  const previous = existing?.isSymbolicLink() ? await readlink(link) : undefined;
  const next = join(dir, '.current.new');
  await rm(next, { force: true });
  await symlink(basename(release), next);
  // A directory where the link goes (made by hand) cannot be replaced by rename: it goes first.
  if (existing?.isDirectory()) await rm(link, { recursive: true });
  await rename(next, link);
  for (const name of await readdir(dir)) {
    if (name.startsWith(RELEASE_PREFIX) && name !== basename(release) && name !== previous) await rm(join(dir, name), { recursive: true });
  }
  return release;
}

// ProtectHome=yes hides these; PrivateTmp=yes gives the unit its own empty /tmp and /var/tmp.
const HIDDEN = ['/home', '/root', '/run/user', '/tmp', '/var/tmp'];

/** The directory the units' sandbox hides that `path` lies in, or undefined when a unit can reach it. */
export function hiddenFromUnits(path: string): string | undefined {
  return HIDDEN.find((dir) => path === dir || path.startsWith(`${dir}/`));
}
