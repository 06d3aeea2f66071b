import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { expect, it } from 'vitest';
import { CLI, FAKE_SMI, capture, cliEnv, tempDir, madeDir } from '../../support/helpers.js';
import { standInConfig, standInLibrary } from '../../support/nvml-stand-in.js';

/** The files a collect run loaded (require's cache at exit, native modules included), by base name. */
async function loadedBy(args: string[], env: Record<string, string>): Promise<string[]> {
  const dir = await tempDir();
  const hook = join(dir, 'hook.cjs');
  const out = join(dir, 'loaded');
  await writeFile(
    hook,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, [...Object.keys(require.cache), ...process.moduleLoadList.filter((name) => name.startsWith('NativeModule '))].join('\\n')));\n`,
  );
  const run = await execa(
    process.execPath,
    ['--require', hook, CLI, 'collect', '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's'), ...args],
    {
      env: cliEnv(env),
      extendEnv: false,
      reject: false,
    },
  );
  expect(run.exitCode).toBe(0);
  return (await readFile(out, 'utf8')).split('\n').map((path) => path.replace(/^.*\/dist\//, 'dist/'));
}

// The nvidia-smi path keeps its start-up: NVML's bundle and koffi's native module load only for --source nvml.
it('collect with nvidia-smi loads neither dist/nvml.js nor koffi; with --source nvml both', async () => {
  const smi = await loadedBy(['--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') });
  expect(smi.filter((path) => /nvml|koffi/.test(path))).toEqual([]);
  const dir = await tempDir();
  await writeFile(join(dir, 'conf'), standInConfig(capture('h200x2__580.159.04__linux-idle')));
  const nvml = await loadedBy(['--source', 'nvml', '--nvml-library', standInLibrary()], { NVML_STAND_IN: join(dir, 'conf') });
  expect(nvml.filter((path) => /nvml|koffi/.test(path))).toEqual(['dist/nvml.js', `dist/koffi/linux_${process.arch}/koffi.node`]);
  // Nor node:crypto, on either path: loading it cost a one-shot run 5 ms on the H200 host, for the
  // eight random bytes of a temp file's name (src/files/random-hex.ts reads them from /dev/urandom).
  expect([...smi, ...nvml].filter((name) => name === 'NativeModule crypto')).toEqual([]);
});
