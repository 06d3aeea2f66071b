import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { execa } from 'execa';
import { onTestFinished } from 'vitest';

export const ROOT = resolve(import.meta.dirname, '../..');
export const FIXTURES = join(ROOT, 'test/fixtures');
export const CAPTURES = join(FIXTURES, 'captures');
export const FAKE_BIN = join(FIXTURES, 'bin');
export const FAKE_SMI = join(FAKE_BIN, 'nvidia-smi');
export const CLI = join(ROOT, 'dist/gpu-textfile.js');

export const capture = (name: string): string => join(CAPTURES, name);

/** A fresh temporary directory, removed when the test finishes. */
export async function tempDir(prefix = 'gpu-textfile-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * `entry` (a TypeScript file under ROOT) bundled into one ES module in a temp directory of its own,
 * for a test to run in a Node.js process of its own: its path.
 */
export async function bundledScript(entry: string): Promise<string> {
  const script = join(await tempDir(), `${entry.split('/').pop()!.replace(/\.ts$/, '')}.mjs`);
  await build({ entryPoints: [join(ROOT, entry)], bundle: true, platform: 'node', format: 'esm', outfile: script, logLevel: 'error' });
  return script;
}

/**
 * A directory made (with its parents) before a run names it: `collect` and `run` refuse a
 * --textfile-dir that does not exist, as node_exporter's is never theirs to create.
 */
export function madeDir(path: string): string {
  mkdirSync(path, { recursive: true });
  return path;
}

/** Environment for a CLI run: no GPU_TEXTFILE_* from the caller or the defaults file, the stand-in capture if given. */
export function cliEnv(extra: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env))
    if (value !== undefined && !key.startsWith('GPU_TEXTFILE_') && !key.startsWith('FAKE_SMI_') && key !== 'NODE_COMPILE_CACHE')
      env[key] = value;
  // Not this machine's /etc/default/gpu-textfile: a test names its own defaults file where it wants one.
  env.GPU_TEXTFILE_DEFAULTS_FILE = '';
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) env[key] = value;
  return env;
}

/** `collect` with its textfile directory (made) and state directory under `dir` (t/ and s/), then `more`. */
export const collectIn = (dir: string, ...more: string[]): string[] => [
  'collect',
  '--textfile-dir',
  madeDir(join(dir, 't')),
  '--state-dir',
  join(dir, 's'),
  ...more,
];

/** Runs the built CLI; never rejects. */
export const runCli = (args: readonly string[], env: Record<string, string | undefined> = {}, timeoutMs = 60_000) =>
  execa(process.execPath, [CLI, ...args], {
    env: cliEnv(env),
    extendEnv: false,
    reject: false,
    timeout: timeoutMs,
    stdin: 'ignore',
    stripFinalNewline: false,
  });

/** Waits (generously: a busy machine) until `ready` holds, polling; whether it did within the deadline. */
export async function eventually(ready: () => Promise<boolean>, deadlineMs = 90_000): Promise<boolean> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (await ready()) return true;
    await new Promise((done) => setTimeout(done, 50));
  }
  return false;
}
