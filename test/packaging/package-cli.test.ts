import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/helpers.js';

// `npm run package`'s manners (scripts/package.mjs): its options said by --help, a usage error for
// what it does not know, before any work. What it builds, and the steps it says while building:
// test/packaging/dist.test.ts.

const runPackage = (args: string[]) =>
  execa(process.execPath, [join(ROOT, 'scripts/package.mjs'), ...args], { cwd: ROOT, reject: false, timeout: 60_000 });

describe('npm run package', () => {
  it('--help names every option and exits 0', async () => {
    const help = await runPackage(['--help']);
    expect({ exit: help.exitCode, err: help.stderr }).toEqual({ exit: 0, err: '' });
    for (const option of ['--arch', '--format', '--version', '--out', '--fast', '--extra-setting', '--snapshot', '--help'])
      expect(help.stdout).toContain(option);
    expect(help.stdout.split('\n')[0]).toMatch(/^usage: npm run package/);
  });

  it.each([
    [['--arch', 'sparc'], 'package: --arch sparc: one of x64, arm64'],
    [['--format', 'zip'], 'package: --format zip: one of tar, deb, rpm'],
    [['--bogus'], "package: Unknown option '--bogus'"],
  ])('%j is a usage error, said first, with the usage after it (exit 2)', async (args, first) => {
    const run = await runPackage(args);
    expect({ exit: run.exitCode, out: run.stdout, first: run.stderr.split('\n')[0] }).toEqual({
      exit: 2,
      out: '',
      first: expect.stringContaining(first),
    });
    expect(run.stderr).toContain('usage: npm run package');
  });
});
