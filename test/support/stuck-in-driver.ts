import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { expect, onTestFinished } from 'vitest';
import { FIXTURES, eventually } from './helpers.js';

// A stand-in nvidia-smi that no signal ends while the test lasts: it reads a file of a FUSE server
// that never answers (test/fixtures/stuck-in-driver/fuse-server.py), so after SIGKILL it sleeps in
// state D, as an nvidia-smi in a driver whose GPU fell off the bus. The mount lives in a mount
// namespace of its own (nobody else on the machine sees it, or can hang on it); the stand-in enters
// it. Needs root, /dev/fuse and python3 (scripts/setup-test-host.sh). The server is killed when the
// test finishes, which lets every stuck reader die.

/** Starts the server in `dir`; returns the stand-in nvidia-smi, a file counting its runs, and how to free them. */
export async function stuckNvidiaSmi(dir: string) {
  const mountpoint = join(dir, 'driver');
  const ready = join(dir, 'driver.ready');
  await execa('mkdir', ['-p', mountpoint]);
  const server = execa(
    'unshare',
    ['-m', '--propagation', 'private', 'python3', join(FIXTURES, 'stuck-in-driver/fuse-server.py'), mountpoint, ready],
    {
      reject: false,
    },
  );
  const free = async () => {
    server.kill('SIGKILL');
    await server;
  };
  onTestFinished(free);
  expect(await eventually(async () => existsSync(ready) || server.exitCode !== null, 60_000)).toBe(true);
  if (!existsSync(ready)) throw new Error(`the FUSE server did not start: ${(await server).stderr}`);
  const runs = join(dir, 'nvidia-smi.runs');
  const nvidiaSmi = join(dir, 'stuck-nvidia-smi');
  writeFileSync(nvidiaSmi, `#!/bin/sh\necho "$$" >> '${runs}'\nexec nsenter --mount=/proc/${server.pid}/ns/mnt cat '${mountpoint}/gpu'\n`, {
    mode: 0o755,
  });
  /** The pids of the stand-in's runs so far. */
  const started = () => (existsSync(runs) ? readFileSync(runs, 'utf8').split('\n').filter(Boolean).map(Number) : []);
  return { nvidiaSmi, started, free };
}
