import { access, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { ROOT } from './helpers.js';

/** package.json's runtimes: the one the packages ship, the other lines engines claims, and old ones refused. */
export interface Runtimes {
  package: string;
  tested: string[];
  unsupported: string[];
}

export const runtimes = async (): Promise<Runtimes> =>
  (JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { runtimes: Runtimes }).runtimes;

/** Where fetched runtimes are kept between runs (node_modules is not in git; npm ci clears it). */
const CACHE = join(ROOT, 'node_modules/.cache/gpu-textfile-runtimes');

/**
 * The npm registry's Node.js `version` for `arch` (its node-linux-ARCH package), unpacked once into the
 * cache: the directory holding bin/node. Unpacked beside and renamed into place, so that two test
 * files asking at once both get a whole one.
 */
export async function nodeRuntime(version: string, arch: string = process.arch): Promise<string> {
  const dir = join(CACHE, `${arch}-${version}`);
  const ready = await access(join(dir, 'bin/node')).then(
    () => true,
    () => false,
  );
  if (ready) return dir;
  await mkdir(CACHE, { recursive: true });
  const work = await mkdtemp(join(CACHE, '.fetch-'));
  try {
    const pack = await execa('npm', ['pack', '--json', '--pack-destination', work, `node-linux-${arch}@${version}`], {
      cwd: work,
      env: { npm_config_update_notifier: 'false' },
    });
    const [{ filename }] = JSON.parse(pack.stdout) as [{ filename: string }];
    await mkdir(join(work, 'unpacked'));
    await execa('tar', ['-xzf', join(work, filename), '-C', join(work, 'unpacked'), '--strip-components=1']);
    await rename(join(work, 'unpacked'), dir).catch(async (error: NodeJS.ErrnoException) => {
      // Another test file got there first: its copy is as good.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return dir;
}
