import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ROOT, runCli, tempDir } from '../support/helpers.js';

const documentation = (unit: string) => [...unit.matchAll(/^Documentation=(.*)$/gm)].map((match) => match[1]!);

describe("the units' Documentation=", () => {
  it('every unit template names the guide', async () => {
    for (const name of await readdir(join(ROOT, 'systemd')))
      expect([name, documentation(await readFile(join(ROOT, 'systemd', name), 'utf8'))]).toEqual([
        name,
        ['file:/usr/local/lib/gpu-textfile/current/docs/deployment.md'],
      ]);
  });

  // systemd-analyze verify looks man: pages up (man:nvidia-smi(1) failed wherever NVIDIA's man pages
  // are absent, as here); a file: link it does not check, so this test does.
  it('install writes units whose Documentation= is installed with them, and they verify with man pages checked', async () => {
    for (const daemon of [[], ['--daemon']]) {
      const root = await tempDir();
      const install = await runCli(['install', '--root', root, '--no-enable', '--csv-dir', '/var/log/gpu-textfile', ...daemon]);
      expect([install.exitCode, install.stderr]).toEqual([0, '']);
      const units = join(root, 'etc/systemd/system');
      const names = await readdir(units);
      for (const name of names) {
        const links = documentation(await readFile(join(units, name), 'utf8'));
        expect([name, links.length]).toEqual([name, 1]);
        for (const link of links) expect([name, link, existsSync(join(root, link.replace(/^file:/, '')))]).toEqual([name, link, true]);
      }
      const verify = await execa(
        'systemd-analyze',
        ['verify', '--recursive-errors=yes', '--man=yes', ...names.map((n) => join(units, n))],
        {
          reject: false,
        },
      );
      expect({ exit: verify.exitCode, out: verify.stdout + verify.stderr }).toEqual({ exit: 0, out: '' });
    }
  });
});
