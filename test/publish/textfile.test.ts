import { mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { missingTextfileDir, publishTextfile, readPrevious, removeStaleTemps, removeTextfile } from '../../src/publish/textfile.js';
import { tempName } from '../../src/files/safe-fs.js';
import { FAKE_SMI, capture, runCli, tempDir, madeDir } from '../support/helpers.js';

describe('publishTextfile', () => {
  it('replaces the file whole and leaves no temp file', async () => {
    const dir = await tempDir();
    expect(publishTextfile(dir, 'a.prom', '# TYPE x gauge\nx 1\n')).toBeUndefined();
    expect(publishTextfile(dir, 'a.prom', '# TYPE x gauge\nx 2\n')).toBeUndefined();
    expect(await readdir(dir)).toEqual(['a.prom']);
    expect(await readFile(join(dir, 'a.prom'), 'utf8')).toBe('# TYPE x gauge\nx 2\n');
  });
  it('says why it could not write', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'not-a-dir'), '');
    expect(publishTextfile(join(dir, 'not-a-dir'), 'a.prom', 'x 1\n')).toEqual({
      reason: 'write_failed',
      message: expect.stringMatching(/not-a-dir is not a directory/),
    });
  });

  it('refuses a textfile directory that is itself a symbolic link, and writes nothing there', async () => {
    const dir = await tempDir();
    const elsewhere = await tempDir();
    symlinkSync(elsewhere, join(dir, 'textfile'));
    expect(publishTextfile(join(dir, 'textfile'), 'a.prom', 'x 1\n')).toEqual({
      reason: 'unsafe_directory',
      message: expect.stringMatching(/textfile is a symbolic link/),
    });
    expect(await readdir(elsewhere)).toEqual([]);
  });
});

describe('missingTextfileDir', () => {
  it('one line for a directory that does not exist (nor its parent); nothing for one that does, or a link there', async () => {
    const dir = await tempDir();
    mkdirSync(join(dir, 'textfile'));
    symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'));
    expect(missingTextfileDir(join(dir, 'textfile'))).toBeUndefined();
    // A link is a name that exists: pinning refuses it later with its own line (unsafe_directory).
    expect(missingTextfileDir(join(dir, 'dangling'))).toBeUndefined();
    for (const missing of [join(dir, 'textfil'), join(dir, 'no/textfile')])
      expect(missingTextfileDir(missing)).toBe(
        `--textfile-dir: ${missing} does not exist (a mistyped one would never be read); give node_exporter's --collector.textfile.directory, create it, or run gpu-textfile install`,
      );
    expect((await readdir(dir)).sort()).toEqual(['dangling', 'textfile']);
  });
});

describe('removeStaleTemps', () => {
  it('removes only our own temp names', async () => {
    const dir = await tempDir();
    for (const name of ['nvidia_gpu.prom', 'nvidia_gpu.prom.3735928559', 'nvidia_gpu.prom.bak', 'nvidia_gpuXprom.1', 'other.prom.1'])
      await writeFile(join(dir, name), '');
    expect(removeStaleTemps(dir, 'nvidia_gpu.prom')).toEqual(['nvidia_gpu.prom.3735928559']);
    expect((await readdir(dir)).sort()).toEqual(['nvidia_gpu.prom', 'nvidia_gpu.prom.bak', 'nvidia_gpuXprom.1', 'other.prom.1']);
  });

  it('removes the random temp names too, and a link by that name without touching its target', async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'victim');
    await writeFile(victim, 'keep\n');
    const file = tempName('nvidia_gpu.prom');
    const link = tempName('nvidia_gpu.prom');
    const other = tempName('other.prom');
    await writeFile(join(dir, file), 'half a fi');
    await writeFile(join(dir, other), 'not ours');
    symlinkSync(victim, join(dir, link));
    expect(removeStaleTemps(dir, 'nvidia_gpu.prom').sort()).toEqual([file, link].sort());
    expect(await readdir(dir)).toEqual([other]);
    expect(readFileSync(victim, 'utf8')).toBe('keep\n');
  });
});

describe('readPrevious', () => {
  it('reads a plain file back', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'a.prom'), 'x 1\n');
    expect(readPrevious(dir, 'a.prom')).toBe('x 1\n');
  });

  it('follows no link, and refuses a file over 1 MiB', async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'victim.prom');
    await writeFile(victim, 'nvidia_gpu_collector_last_success_timestamp_seconds 1\n');
    symlinkSync(victim, join(dir, 'link.prom'));
    await writeFile(join(dir, 'big.prom'), 'x'.repeat(1024 * 1024 + 1));
    expect([readPrevious(dir, 'link.prom'), readPrevious(dir, 'big.prom')]).toEqual([undefined, undefined]);
  });

  it('does not block on a FIFO planted at the name', async () => {
    const dir = await tempDir();
    await execa('mkfifo', [join(dir, 'a.prom')]);
    expect(readPrevious(dir, 'a.prom')).toBeUndefined();
  });
});

describe('a reader in a loop while collects run', () => {
  // Twelve runs of the built program: a second each on a quiet machine, several beside other work.
  it('never sees a partial file', { timeout: 240_000 }, async () => {
    const dir = await tempDir();
    const file = join(dir, 'textfile/nvidia_gpu.prom');
    let running = true;
    const seen = { reads: 0, partial: [] as string[] };
    const reader = (async () => {
      while (running) {
        const text = await readFile(file, 'utf8').catch(() => undefined);
        if (text !== undefined) {
          seen.reads++;
          const { problems, samples } = checkExposition(text);
          const last = samples[samples.length - 1]?.name;
          if (problems.length > 0 || last !== 'nvidia_gpu_collector_process_rows_skipped') seen.partial.push(text.slice(-200));
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const captures = ['h200x2__580.159.04__linux-idle', 'h200x2__580.159.04__linux-load', 'h200x2__580.159.04__field-errors'];
    for (let i = 0; i < 12; i++) {
      const result = await runCli(
        // The stand-in is a Node.js script: on a busy machine its start alone can pass collect's 10 s default.
        [
          'collect',
          '--textfile-dir',
          madeDir(join(dir, 'textfile')),
          '--state-dir',
          join(dir, 'state'),
          '--nvidia-smi',
          FAKE_SMI,
          '--timeout',
          '60s',
        ],
        {
          FAKE_SMI_CAPTURE: capture(captures[i % captures.length]!),
        },
      );
      expect(result.exitCode, result.stderr).toBe(0);
    }
    running = false;
    await reader;
    expect(seen.reads).toBeGreaterThan(12);
    expect(seen.partial).toEqual([]);
  });
});

const H200 = capture('h200x2__580.159.04__linux-idle');
const collectInto = (textfile: string, state: string) => [
  'collect',
  '--textfile-dir',
  textfile,
  '--state-dir',
  state,
  '--nvidia-smi',
  FAKE_SMI,
];

describe('collect in directories another user owns, with links planted', () => {
  it('never writes, truncates or chmods a link target, and replaces the links with its own files', async () => {
    const root = await tempDir();
    const [textfile, state] = [join(root, 'textfile'), join(root, 'state')];
    for (const dir of [textfile, state]) {
      mkdirSync(dir, { mode: 0o755 });
      await execa('chown', ['65534:65534', dir]);
    }
    const victims = join(await tempDir(), 'etc');
    mkdirSync(victims);
    const victim = (name: string, text: string, mode: number) => {
      const path = join(victims, name);
      return writeFile(path, text, { mode }).then(() => ({ path, text, mode }));
    };
    const shadow = await victim('shadow', 'root:$6$secret:19000::::::\n', 0o600);
    const sudoers = await victim('sudoers', 'root ALL=(ALL) ALL\n', 0o440);
    symlinkSync(shadow.path, join(textfile, 'nvidia_gpu.prom'));
    symlinkSync(sudoers.path, join(state, 'state.json'));

    // Meanwhile, plant links at names like the temp files ours and earlier versions use.
    let planting = true;
    let planted = 0;
    const planter = (async () => {
      while (planting) {
        for (const [dir, name] of [
          [textfile, 'nvidia_gpu.prom'],
          [state, 'state.json'],
        ] as const) {
          for (const temp of [tempName(name), `${name}.${planted}`]) symlinkSync(planted % 2 ? shadow.path : sudoers.path, join(dir, temp));
        }
        planted++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await runCli(collectInto(textfile, state), { FAKE_SMI_CAPTURE: H200 }));
    planting = false;
    await planter;

    expect(results.map((r) => [r.exitCode, r.stderr])).toEqual([
      [0, ''],
      [0, ''],
      [0, ''],
    ]);
    expect(planted).toBeGreaterThan(0);
    for (const v of [shadow, sudoers]) {
      expect(readFileSync(v.path, 'utf8')).toBe(v.text);
      expect(statSync(v.path).mode & 0o777).toBe(v.mode);
    }
    for (const file of [join(textfile, 'nvidia_gpu.prom'), join(state, 'state.json')]) {
      const info = statSync(file, { throwIfNoEntry: true });
      expect([info.isFile(), info.mode & 0o777, info.uid]).toEqual([true, 0o644, 0]);
    }
    expect(checkExposition(await readFile(join(textfile, 'nvidia_gpu.prom'), 'utf8')).problems).toEqual([]);
  });

  it.each(['textfile', 'state'])(
    'refuses a %s directory that is itself a symbolic link: exit 1, one line, nothing written',
    async (which) => {
      const root = await tempDir();
      const elsewhere = await tempDir();
      const dirs = { textfile: join(root, 'textfile'), state: join(root, 'state') };
      symlinkSync(elsewhere, dirs[which as keyof typeof dirs]);
      if (which === 'state') mkdirSync(dirs.textfile);
      const result = await runCli(collectInto(dirs.textfile, dirs.state), { FAKE_SMI_CAPTURE: H200 });
      expect(result.exitCode).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `^gpu-textfile: unsafe_directory: ${dirs[which as keyof typeof dirs]} is a symbolic link; refusing to write through it; nothing written\\n$`,
        ),
      );
      expect(await readdir(elsewhere)).toEqual([]);
    },
  );
});

// A textfile directory is never created (node_exporter's is not ours to make): below /proc as anywhere.
describe('collect with a directory below /proc', () => {
  it('--textfile-dir /proc/nope: exit 2 and one line, before anything runs', { timeout: 90_000 }, async () => {
    const root = await tempDir();
    const result = await runCli(collectInto('/proc/nope', join(root, 'state')), { FAKE_SMI_CAPTURE: H200 }, 60_000);
    expect([result.exitCode, result.stderr]).toEqual([
      2,
      expect.stringMatching(/^gpu-textfile: --textfile-dir: \/proc\/nope does not exist [^\n]*\n$/),
    ]);
    expect(await readdir(root)).toEqual([]);
  });

  it('--state-dir /proc/nope: the textfile is written, and one line says the state is not', { timeout: 90_000 }, async () => {
    const root = await tempDir();
    const result = await runCli(collectInto(madeDir(join(root, 'textfile')), '/proc/nope'), { FAKE_SMI_CAPTURE: H200 }, 60_000);
    expect([result.exitCode, result.stderr]).toEqual([
      0,
      expect.stringMatching(/^gpu-textfile: state not saved in \/proc\/nope: ENOENT[^\n]*\n$/),
    ]);
    expect(await readdir(join(root, 'textfile'))).toEqual(['nvidia_gpu.prom']);
  });

  it('--csv-dir /proc/nope: the textfile is written, exit 1, and one line says the row is not', { timeout: 90_000 }, async () => {
    const root = await tempDir();
    const result = await runCli(
      [...collectInto(madeDir(join(root, 'textfile')), join(root, 'state')), '--csv-dir', '/proc/nope'],
      { FAKE_SMI_CAPTURE: H200 },
      60_000,
    );
    expect([result.exitCode, result.stderr]).toEqual([1, expect.stringMatching(/^gpu-textfile: [^\n]*\/proc\/nope[^\n]*\n$/)]);
    expect(await readdir(join(root, 'textfile'))).toEqual(['nvidia_gpu.prom']);
  });
});

describe('removeTextfile (run, when its job ends)', () => {
  it('removes the file; a link planted at its name is removed, never what it points to', async () => {
    const dir = await tempDir();
    const target = join(dir, 'precious');
    await writeFile(target, 'keep me');
    mkdirSync(join(dir, 't'));
    await writeFile(join(dir, 't/job.prom'), 'x 1\n');
    symlinkSync(target, join(dir, 't/link.prom'));
    expect([removeTextfile(join(dir, 't'), 'job.prom'), removeTextfile(join(dir, 't'), 'link.prom')]).toEqual([undefined, undefined]);
    expect(await readdir(join(dir, 't'))).toEqual([]);
    expect(await readFile(target, 'utf8')).toBe('keep me');
    // Gone already, or no directory: nothing to do.
    expect([removeTextfile(join(dir, 't'), 'job.prom'), removeTextfile(join(dir, 'none'), 'job.prom')]).toEqual([undefined, undefined]);
  });
});
