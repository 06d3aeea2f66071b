import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { publishTextfile, removeStaleTemps } from '../../src/publish/textfile.js';
import { FAKE_SMI, capture, runCli, tempDir } from '../helpers.js';

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
    expect(publishTextfile(join(dir, 'not-a-dir'), 'a.prom', 'x 1\n')).toMatch(/^cannot write .*a\.prom: (ENOTDIR|EEXIST)/);
  });
});

describe('removeStaleTemps', () => {
  it('removes only our own temp names', async () => {
    const dir = await tempDir();
    for (const name of ['nvidia_gpu.prom', 'nvidia_gpu.prom.3735928559', 'nvidia_gpu.prom.bak', 'nvidia_gpuXprom.1', 'other.prom.1']) await writeFile(join(dir, name), '');
    expect(removeStaleTemps(dir, 'nvidia_gpu.prom')).toEqual(['nvidia_gpu.prom.3735928559']);
    expect((await readdir(dir)).sort()).toEqual(['nvidia_gpu.prom', 'nvidia_gpu.prom.bak', 'nvidia_gpuXprom.1', 'other.prom.1']);
  });
});

describe('a reader in a loop while collects run', () => {
  it('never sees a partial file', async () => {
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
      const result = await runCli(['collect', '--textfile-dir', join(dir, 'textfile'), '--state-dir', join(dir, 'state'), '--nvidia-smi', FAKE_SMI], {
        FAKE_SMI_CAPTURE: capture(captures[i % captures.length]!),
      });
      expect(result.exitCode).toBe(0);
    }
    running = false;
    await reader;
    expect(seen.reads).toBeGreaterThan(12);
    expect(seen.partial).toEqual([]);
  });
});
