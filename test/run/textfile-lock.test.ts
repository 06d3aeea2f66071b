import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, FAKE_SMI, capture, cliEnv, eventually, runCli, tempDir, madeDir } from '../support/helpers.js';

// run's textfile is its own (src/run/textfile-lock.ts): collect's name is refused before anything
// starts, and a name whose lock another writer holds leaves that writer's file alone.

const H200X2 = capture('h200x2__580.159.04__linux-load');

const runArgs = (dir: string, fileName: string) => [
  'run',
  '--nvidia-smi',
  FAKE_SMI,
  '--state-dir',
  join(dir, 's'),
  '--textfile-dir',
  madeDir(join(dir, 't')),
  '--file-name',
  fileName,
  '--',
  'touch',
  join(dir, 'ran'),
];

describe("run's textfile", () => {
  it("collect's file name is a usage error: the job is not started", async () => {
    const dir = await tempDir();
    const result = await runCli(runArgs(dir, 'nvidia_gpu.prom'), { FAKE_SMI_CAPTURE: H200X2 });
    expect([result.exitCode, result.stderr]).toEqual([
      2,
      "gpu-textfile: --file-name: nvidia_gpu.prom is collect's file; a job's textfile needs a name of its own (the default is gpu-textfile-run-<task>.prom)\n",
    ]);
    await expect(stat(join(dir, 'ran'))).rejects.toThrow(/ENOENT/);
  });

  it("a name another collector holds (collect --file-name): one line, the job runs without a textfile, the collector's file left", async () => {
    const dir = await tempDir();
    const textfiles = madeDir(join(dir, 't'));
    const daemon = execa(
      process.execPath,
      [
        CLI,
        'collect',
        '--source',
        'demo',
        '--interval',
        '1s',
        '--textfile-dir',
        textfiles,
        '--state-dir',
        join(dir, 'cs'),
        '--file-name',
        'gpus.prom',
      ],
      { env: cliEnv(), extendEnv: false, reject: false, timeout: 90_000, stdin: 'ignore' },
    );
    const file = join(textfiles, 'gpus.prom');
    expect(await eventually(async () => (await stat(file).catch(() => undefined)) !== undefined)).toBe(true);
    const result = await runCli(runArgs(dir, 'gpus.prom'), { FAKE_SMI_CAPTURE: H200X2 });
    daemon.kill('SIGTERM');
    await daemon;
    expect([result.exitCode, result.stderr.split('\n')[0]]).toEqual([
      0,
      `gpu-textfile run: ${file} is another writer's (pid ${daemon.pid} holds its lock): choose another --file-name; the job runs without a textfile`,
    ]);
    expect((await stat(join(dir, 'ran'))).isFile()).toBe(true);
    // collect's own series, not run's task-labelled ones.
    expect(await readFile(file, 'utf8')).not.toContain('task=');
    expect((await readdir(textfiles)).filter((name) => name.endsWith('.prom'))).toEqual(['gpus.prom']);
  }, 120_000);
});
