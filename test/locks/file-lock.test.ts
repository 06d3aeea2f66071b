import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { chown, mkdir, readFile, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it, onTestFinished } from 'vitest';
import { FILE_STEPS } from '../../src/files/file-steps.js';
import { OWN_PROC } from '../../src/host/host.js';
import { isLockError, removeLeftoverTemps, tryLock, withFileLock } from '../../src/locks/file-lock.js';
import { currentOwner, formatOwner } from '../../src/locks/owner.js';
import { pinDir } from '../../src/files/safe-fs.js';
import { CLI, FAKE_SMI, bundledScript, capture, cliEnv, runCli, tempDir, madeDir } from '../support/helpers.js';

const H200 = capture('h200x2__580.159.04__linux-idle');
const me = currentOwner();
const NOBODY = 65534;

/** A real second process holding the lock at `path` until it is told to let go (or killed). */
async function holder(path: string) {
  const script = await bundledScript('test/locks/holder.ts');
  const child = execa(process.execPath, [script, path], { stdin: 'pipe', reject: false, env: cliEnv(), extendEnv: false });
  const said = await new Promise<string>((resolve) => child.stdout!.once('data', (chunk: Buffer) => resolve(String(chunk).trim())));
  expect(said).toBe('held');
  return {
    pid: child.pid!,
    letGo: async () => {
      child.stdin!.end();
      await child;
    },
    kill: async () => {
      child.kill('SIGKILL');
      await child;
    },
  };
}

describe('tryLock', () => {
  it('writes its owner line whole and removes it on release', async () => {
    const path = join(await tempDir(), '.x.lock');
    const lock = await tryLock(path);
    expect(lock.kind).toBe('held');
    expect(await readFile(path, 'utf8')).toBe(formatOwner(me));
    await (lock.kind === 'held' && lock.release());
    expect(await readdir(join(path, '..'))).toEqual([]);
  });

  it('a live owner keeps it: busy, with its pid', async () => {
    const path = join(await tempDir(), '.x.lock');
    await writeFile(path, formatOwner(me));
    expect(await tryLock(path)).toEqual({ kind: 'busy', pid: process.pid });
  });

  it.each([
    ['empty (created, never written: a full disk or a kill)', ''],
    ['garbled', '@@@ ??? ###\n'],
    ['cut short', `${process.pid} 12`],
    ['a live pid with another start time (pid reused after a reboot)', formatOwner({ ...me, startTicks: '1' })],
    ['a live pid and start time from another boot', formatOwner({ ...me, bootId: '00000000-0000-0000-0000-000000000000' })],
  ])('%s never blocks', async (_title, text) => {
    const path = join(await tempDir(), '.x.lock');
    await writeFile(path, text);
    const lock = await tryLock(path);
    expect(lock.kind).toBe('held');
    expect(await readFile(path, 'utf8')).toBe(formatOwner(me));
  });

  it('a lock another user planted, naming a live process of ours, never blocks', async () => {
    const path = join(await tempDir(), '.x.lock');
    await writeFile(path, formatOwner(me));
    await chown(path, NOBODY, NOBODY);
    expect((await tryLock(path)).kind).toBe('held');
  });

  it('a symbolic link planted at its name is replaced, its target never written', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'target'), 'precious\n');
    await symlink(join(dir, 'target'), join(dir, '.x.lock'));
    expect((await tryLock(join(dir, '.x.lock'))).kind).toBe('held');
    expect(await readFile(join(dir, 'target'), 'utf8')).toBe('precious\n');
    expect(await readFile(join(dir, '.x.lock'), 'utf8')).toBe(formatOwner(me));
  });
});

describe('one test for each lock, held by a real second process', () => {
  it('the CSV lock: withFileLock waits its time, then reports the holder; runs once the holder lets go', async () => {
    const path = join(await tempDir(), '.default.csv.lock');
    const held = await holder(path);
    let ran = false;
    const result = await withFileLock(path, 300, async () => (ran = true));
    expect([result, ran]).toEqual([{ lockError: `${path} is held by pid ${held.pid} for more than 300 ms` }, false]);
    await held.letGo();
    expect(await withFileLock(path, 300, async () => 'ran')).toBe('ran');
  });

  it('the CSV lock: withFileLock, waiting, takes it as soon as the holder lets go', async () => {
    const path = join(await tempDir(), '.default.csv.lock');
    const held = await holder(path);
    // Its first attempt is made before withFileLock returns: it is waiting on the holder.
    const waiting = withFileLock(path, 600_000, async () => 'ran');
    await held.letGo();
    expect(await waiting).toBe('ran');
  });

  it('the CSV lock: a holder killed with SIGKILL does not block (its lock file is left behind)', async () => {
    const path = join(await tempDir(), '.default.csv.lock');
    const held = await holder(path);
    await held.kill();
    expect(existsSync(path)).toBe(true);
    expect(await withFileLock(path, 0, async () => 'ran')).toBe('ran');
  });

  it('the textfile lock: collect exits 75 while it is held, and runs once its holder is killed', async () => {
    const root = await tempDir();
    const args = ['collect', '--textfile-dir', madeDir(join(root, 't')), '--state-dir', join(root, 's'), '--nvidia-smi', FAKE_SMI];
    await runCli(args, { FAKE_SMI_CAPTURE: H200 });
    const held = await holder(join(root, 't/.nvidia_gpu.prom.lock'));
    const busy = await runCli(args, { FAKE_SMI_CAPTURE: H200 });
    expect([busy.exitCode, busy.stderr]).toEqual([
      75,
      `gpu-textfile: another collect (pid ${held.pid}) is still running for ${join(root, 't/nvidia_gpu.prom')}; not starting a second one\n`,
    ]);
    await held.kill();
    const after = await runCli(args, { FAKE_SMI_CAPTURE: H200 });
    expect([after.exitCode, after.stderr]).toEqual([0, '']);
  });
});

describe("collect's textfile lock", () => {
  const args = (root: string) => [
    'collect',
    '--textfile-dir',
    madeDir(join(root, 't')),
    '--state-dir',
    join(root, 's'),
    '--nvidia-smi',
    FAKE_SMI,
  ];

  it('a disk that was full while the lock was taken: freeing it is enough for the next run', async () => {
    const root = await tempDir();
    // RLIMIT_FSIZE 0: every write to a file fails with EFBIG, as on a full disk (Node.js ignores SIGXFSZ).
    const full = await execa('sh', ['-c', 'ulimit -f 0; exec "$@"', 'sh', process.execPath, CLI, ...args(root)], {
      env: cliEnv({ FAKE_SMI_CAPTURE: H200 }),
      extendEnv: false,
      reject: false,
    });
    expect(full.exitCode).toBe(1);
    expect(full.stderr).toMatch(/^gpu-textfile: cannot create .*\/t\/\.nvidia_gpu\.prom\.lock: EFBIG; nothing written$/);
    expect(await readdir(join(root, 't'))).toEqual([]);
    const next = await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    expect([next.exitCode, next.stderr]).toEqual([0, '']);
  });

  it('an empty lock (a run killed between create and write) does not make every later run exit 75', async () => {
    const root = await tempDir();
    await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    await writeFile(join(root, 't/.nvidia_gpu.prom.lock'), '');
    const next = await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    expect([next.exitCode, next.stderr]).toEqual([0, '']);
    expect(await readdir(join(root, 't'))).toEqual(['nvidia_gpu.prom']);
  });

  it('a lock whose pid now names another process (after a reboot) does not block', async () => {
    const root = await tempDir();
    await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    // Our own pid is alive, but it was not alive then: the recorded start time is another's.
    await writeFile(join(root, 't/.nvidia_gpu.prom.lock'), formatOwner({ ...me, startTicks: '1' }));
    const next = await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    expect([next.exitCode, next.stderr]).toEqual([0, '']);
  });

  it('a FIFO planted at its name neither blocks the run nor the lock', async () => {
    const root = await tempDir();
    await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    await execa('mkfifo', [join(root, 't/.nvidia_gpu.prom.lock')]);
    const next = await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    expect([next.exitCode, next.stderr]).toEqual([0, '']);
  });

  it("the temp files of takers killed mid-way are cleared; a live taker's is left", async () => {
    const root = await tempDir();
    await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    const t = (name: string) => join(root, 't', name);
    const [dead, unwritten, fresh, live] = ['0123456789abcdef', '1123456789abcdef', '2123456789abcdef', '3123456789abcdef'].map(
      (hex) => `..nvidia_gpu.prom.lock.${hex}.tmp`,
    );
    await writeFile(t(dead!), formatOwner({ ...me, startTicks: '1' }));
    await writeFile(t(unwritten!), '');
    await utimes(t(unwritten!), new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    await writeFile(t(fresh!), '');
    await writeFile(t(live!), formatOwner(me));
    const next = await runCli(args(root), { FAKE_SMI_CAPTURE: H200 });
    expect([next.exitCode, next.stderr]).toEqual([0, '']);
    expect((await readdir(join(root, 't'))).sort()).toEqual([fresh, live, 'nvidia_gpu.prom'].sort());
    expect(removeLeftoverTemps(t('.nvidia_gpu.prom.lock'), Date.now() + 120_000)).toBeUndefined();
    expect((await readdir(join(root, 't'))).sort()).toEqual([live, 'nvidia_gpu.prom'].sort());
  });
});

/** A dead process's owner line: a stale lock. */
const staleLine = formatOwner({ ...me, pid: 4_194_304 + 1 });

describe('takers that race', () => {
  it('a stale lock another taker removed just before our removal: taken, no error', async () => {
    const path = join(await tempDir(), 'x.lock');
    await writeFile(path, staleLine);
    let unlinks = 0;
    const rivalFirst = {
      ...FILE_STEPS,
      unlink: (at: string) => {
        // The first removal is of the stale lock: the rival gets there first.
        if (++unlinks === 1) {
          expect(at).toMatch(/\/x\.lock$/);
          FILE_STEPS.unlink(at);
        }
        FILE_STEPS.unlink(at);
      },
    };
    const lock = await tryLock(path, rivalFirst);
    expect(lock.kind).toBe('held');
    expect(await readFile(path, 'utf8')).toBe(formatOwner(me));
  });

  it('a name that holds a new stale lock at every attempt: busy after a bounded number of rounds, holder unknown', async () => {
    const dir = await tempDir();
    let links = 0;
    const contended = {
      ...FILE_STEPS,
      link: (from: string, to: string) => {
        links++;
        writeFileSync(to, staleLine);
        FILE_STEPS.link(from, to);
      },
    };
    expect(await tryLock(join(dir, 'x.lock'), contended)).toEqual({ kind: 'busy', pid: 0 });
    expect(links).toBe(20);
    expect(await withFileLock(join(dir, 'x.lock'), 0, async () => 'ran', contended)).toEqual({
      lockError: `${join(dir, 'x.lock')} is held by pid ? for more than 0 ms`,
    });
    expect((await readdir(dir)).filter((name) => name !== 'x.lock')).toEqual([]);
  });
});

describe('a lock in a directory the caller pinned', () => {
  it('an error names the lock by its directory and name', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'x.lock'));
    const pinned = pinDir(dir);
    onTestFinished(() => pinned.close());
    expect(await tryLock({ dir: pinned, name: 'x.lock' })).toEqual({ kind: 'error', message: `cannot create ${dir}/x.lock: EISDIR` });
  });
});

describe('isLockError', () => {
  it.each([
    [{ lockError: 'x.lock is held' }, true],
    ['ran', false],
    [{ rows: 1 }, false],
    [null, false],
    [undefined, false],
  ])('%j: %s', (value, expected) => expect(isLockError(value)).toBe(expected));
});

describe('descriptors', () => {
  const openDescriptors = () => readdirSync(`${OWN_PROC}/self/fd`).length;
  it('meeting a live holder, and clearing temp files, leave no descriptor open (a daemon meets them every sample)', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'x.lock'), formatOwner(me));
    const before = openDescriptors();
    for (let i = 0; i < 5; i++) {
      expect((await tryLock(join(dir, 'x.lock'))).kind).toBe('busy');
      expect(removeLeftoverTemps(join(dir, 'x.lock'))).toBeUndefined();
    }
    expect(openDescriptors()).toBe(before);
  });
});
