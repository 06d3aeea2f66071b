import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ROOT, tempDir } from '../support/helpers.js';

/** The cron.d file's jobs: minute hour dom month dow user command. */
async function cronCommands(): Promise<string[]> {
  const text = await readFile(join(ROOT, 'cron/gpu-textfile'), 'utf8');
  return text
    .split('\n')
    .filter((line) => /^[\d*]/.test(line))
    .map((line) => line.split(/\s+/).slice(6).join(' '));
}

describe('cron.d jobs', () => {
  // cron mails whatever a job prints: on a broken host that is four mails a minute. Each job's output
  // must reach syslog instead. The job lines run here under sh, as cron runs them, with a failing
  // gpu-textfile and a logger that records what it was given.
  it("send a failing run's output to syslog and print nothing for cron to mail", async () => {
    const dir = await tempDir();
    const logged = join(dir, 'logged');
    await writeFile(join(dir, 'gpu-textfile'), '#!/bin/sh\necho "gpu-textfile: driver_unreachable: $*" >&2\necho "out" \nexit 1\n');
    await writeFile(join(dir, 'logger'), `#!/bin/sh\necho "$*" >> ${logged}\ncat >> ${logged}\n`);
    await writeFile(join(dir, 'sleep'), '#!/bin/sh\nexit 0\n');
    for (const name of ['gpu-textfile', 'logger', 'sleep']) await chmod(join(dir, name), 0o755);
    const commands = await cronCommands();
    expect(commands).toHaveLength(5);
    for (const command of commands) {
      const run = await execa('sh', ['-c', command], {
        env: { PATH: `${dir}:/usr/bin:/bin`, GPU_TEXTFILE_CSV_DIR: join(dir, 'csv') },
        extendEnv: false,
        reject: false,
      });
      expect({ command, stdout: run.stdout, stderr: run.stderr }).toEqual({ command, stdout: '', stderr: '' });
    }
    const text = await readFile(logged, 'utf8');
    expect(text.match(/^-t gpu-textfile -p daemon\.warning$/gm)).toHaveLength(5);
    expect(text.match(/driver_unreachable: collect/g)).toHaveLength(4);
    expect(text.match(/driver_unreachable: archive/g)).toHaveLength(1);
  });
});
