import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CLI, ROOT, cliEnv, tempDir } from '../helpers.js';

describe('the installed command', () => {
  it('prints the package version from any working directory', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const run = await execa(process.execPath, [CLI, '--version'], { cwd: await tempDir(), env: cliEnv(), extendEnv: false, reject: false });
    expect({ exit: run.exitCode, out: run.stdout, err: run.stderr }).toEqual({ exit: 0, out: version, err: '' });
  });

  // `| head -1` closes the pipe after one line; `true` before the first: no stack trace, and a status the pipeline accepts.
  it('stops quietly when its reader closes the pipe', async () => {
    const root = await tempDir();
    for (const reader of ['head -1', 'true']) {
      const run = await execa(
        'bash',
        ['-o', 'pipefail', '-c', `"${process.execPath}" "${CLI}" install --dry-run --root "$1" | ${reader}`, 'sh', root],
        {
          env: cliEnv(),
          extendEnv: false,
          reject: false,
        },
      );
      expect({ reader, exit: run.exitCode, err: run.stderr, lines: run.stdout === '' ? 0 : run.stdout.split('\n').length }).toEqual({
        reader,
        exit: 0,
        err: '',
        lines: reader === 'true' ? 0 : 1,
      });
    }
  });
});
