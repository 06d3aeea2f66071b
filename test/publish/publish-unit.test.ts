import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { failedCollection, type Collection } from '../../src/collection.js';
import { checkExposition } from '../../src/exposition/check.js';
import { newRenderMemo, previousSuccessSeconds, publish, renderChecked } from '../../src/publish/publish.js';
import { checkDirectories } from '../../src/publish/textfile.js';
import { collectCapture } from '../support/capture-replay.js';
import { tempDir } from '../support/helpers.js';
import { fillLeaving, smallTmpfs } from '../support/small-tmpfs.js';

// publish() in process: the CLI tests beside this file run it through the built bundle.

const gpu = (n: string) => ({ gpu: n, uuid: `GPU-${n}`, readings: new Map() });
const collection = (samples = [gpu('0')]): Collection => ({
  fields: [],
  samples,
  down: [],
  health: { durationSeconds: 0.25, lastSuccessSeconds: 1000 },
});

/** A stream that keeps what is written to it. */
const sink = () => {
  const chunks: string[] = [];
  const out = new Writable({
    write: (chunk, _, done) => {
      chunks.push(String(chunk));
      done();
    },
  });
  return { out, text: () => chunks.join('') };
};

describe('renderChecked', () => {
  it('a collection that would render a duplicate series is replaced by the health block, saying internal_error', () => {
    const { text, failure } = renderChecked(collection([gpu('0'), gpu('0')]), [['site', 'a']]);
    expect(failure).toEqual({
      reason: 'internal_error',
      message: expect.stringMatching(/^rendered exposition breaks the format: duplicate series /),
    });
    expect(text).toContain('nvidia_gpu_collector_error{site="a",reason="internal_error"} 1\n');
    expect(text).toContain('nvidia_gpu_collector_last_success_timestamp_seconds{site="a"} 1000\n');
    expect(text).not.toContain('nvidia_gpu_up');
  });
  it('a good collection renders as it is, with its own failure (none)', () => {
    const { text, failure } = renderChecked(collection(), []);
    expect(failure).toBeUndefined();
    expect(text).toContain('nvidia_gpu_up{gpu="0",uuid="GPU-0"} 1\n');
  });
  it('without the text check (the daemon mode after its first sample): the same text, the families still checked', () => {
    expect(renderChecked(collection(), [], false)).toEqual(renderChecked(collection(), []));
    expect(renderChecked(collection([gpu('0'), gpu('0')]), [], false).failure?.reason).toBe('internal_error');
  });
  it('a kept memo holds the label arrays it built, and the next collection renders from them', () => {
    const memo = newRenderMemo();
    const first = renderChecked(collection(), [['site', 'a']], true, [], memo);
    expect(memo.arrays.kept.size).toBeGreaterThan(0);
    const kept = [...memo.arrays.kept.values()].map((entry) => entry.labels);
    expect(renderChecked(collection(), [['site', 'a']], true, [], memo)).toEqual(first);
    expect([...memo.arrays.kept.values()].every((entry, i) => entry.labels === kept[i])).toBe(true);
  });
});

describe('previousSuccessSeconds', () => {
  it('reads the last success from the previous file: none when there is no file, or it has no such sample', async () => {
    const dir = await tempDir();
    const target = { textfileDir: dir, fileName: 'gpu.prom' };
    expect(await previousSuccessSeconds(target)).toBeUndefined();
    await writeFile(join(dir, 'gpu.prom'), '# TYPE other gauge\nother 5\n');
    expect(await previousSuccessSeconds(target)).toBeUndefined();
    await writeFile(
      join(dir, 'gpu.prom'),
      '# TYPE other gauge\nother 5\n# TYPE nvidia_gpu_collector_last_success_timestamp_seconds gauge\nnvidia_gpu_collector_last_success_timestamp_seconds 1234\n',
    );
    expect(await previousSuccessSeconds(target)).toBe(1234);
  });
});

describe('publish', () => {
  it('--dry-run of a failed collection prints the health block and returns the failure', async () => {
    const { out, text } = sink();
    const failure = { reason: 'gpu_lost', message: 'no GPU could be read' } as const;
    const result = await publish(
      failedCollection(failure, 0.1, 1000),
      { textfileDir: await tempDir(), fileName: 'gpu.prom', dryRun: true, labels: [], out },
      new Date(),
    );
    expect(result).toEqual({ failure });
    expect(text()).toContain('nvidia_gpu_collector_error{reason="gpu_lost"} 1\n');
  });
  it('a text that does not fit on the disk: the health block alone replaces it, saying write_failed, and the line says so', async () => {
    const disk = await smallTmpfs(128 * 1024);
    const { collection: big } = await collectCapture('h200x2__580.159.04__linux-idle');
    const target = { textfileDir: disk, fileName: 'gpu.prom', dryRun: false, labels: [] as [string, string][], out: sink().out };
    expect((await publish(big, target, new Date())).textfileError).toBeUndefined();
    // Room for the health block (under a page), not for the whole text (several pages).
    fillLeaving(disk, 4096);
    const result = await publish(big, target, new Date());
    expect(result.textfileError).toMatch(
      new RegExp(`^write_failed: cannot write ${disk}/gpu\\.prom: ENOSPC.* \\(wrote ${disk}/gpu\\.prom with the health block only\\)$`),
    );
    const written = checkExposition(await readFile(join(disk, 'gpu.prom'), 'utf8'));
    expect(written.samples.find((s) => s.name === 'nvidia_gpu_collector_error')?.labels).toEqual({ reason: 'write_failed' });
    expect(written.samples.some((s) => s.name === 'nvidia_gpu_up')).toBe(false);
  });
  it("a peer's file (--compat) that would break the format is written empty, and the line says so (a bug, never silent)", async () => {
    const dir = await tempDir();
    const twice = { labels: [['gpu', '0']] as const, value: 1 };
    const compat = [
      { fileName: 'gpu_peer.prom', families: () => [{ name: 'peer_up', type: 'gauge' as const, help: 'Up.', samples: [twice, twice] }] },
    ];
    const target = { textfileDir: dir, fileName: 'gpu.prom', dryRun: false, labels: [], out: sink().out, compat };
    const { textfileError } = await publish(collection(), target, new Date());
    expect(textfileError).toMatch(
      new RegExp(`^internal_error: ${dir}/gpu_peer\\.prom would break the format \\(duplicate series [^;]*\\): written empty$`),
    );
    expect(await readFile(join(dir, 'gpu_peer.prom'), 'utf8')).toBe('');
    expect(await readFile(join(dir, 'gpu.prom'), 'utf8')).toContain('nvidia_gpu_up{gpu="0",uuid="GPU-0"} 1\n');
  });
  it('--dry-run prints the text and writes nothing', async () => {
    const dir = await tempDir();
    const { out, text } = sink();
    const result = await publish(collection(), { textfileDir: dir, fileName: 'gpu.prom', dryRun: true, labels: [], out }, new Date());
    expect(result).toEqual({ failure: undefined });
    expect(text()).toContain('nvidia_gpu_up{gpu="0",uuid="GPU-0"} 1\n');
    expect(await readdir(dir)).toEqual([]);
  });
  it('writes the textfile and the CSV rows', async () => {
    const dir = await tempDir();
    const csv = { dir: join(dir, 'csv'), task: 'job', host: 'h', knownGpus: () => [] };
    const target = { textfileDir: dir, fileName: 'gpu.prom', dryRun: false, labels: [], out: sink().out, csv };
    expect(await publish(collection(), target, new Date())).toEqual({ failure: undefined, textfileError: undefined, csvError: undefined });
    expect(await readFile(join(dir, 'gpu.prom'), 'utf8')).toContain('nvidia_gpu_up{gpu="0",uuid="GPU-0"} 1\n');
    expect((await readFile(join(dir, 'csv', 'job.csv'), 'utf8')).split('\n').filter(Boolean)).toHaveLength(2);
  });
  it('a textfile directory that is a link: nothing written, and the line says why', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'real'));
    await symlink(join(dir, 'real'), join(dir, 'link'));
    const target = { textfileDir: join(dir, 'link'), fileName: 'gpu.prom', dryRun: false, labels: [], out: sink().out };
    const result = await publish(collection(), target, new Date());
    expect(result.textfileError).toBe(
      `unsafe_directory: ${join(dir, 'link')} is a symbolic link; refusing to write through it; nothing written`,
    );
    expect(await readdir(join(dir, 'real'))).toEqual([]);
  });
});

describe('checkDirectories', () => {
  it('a textfile or state directory that is a link is refused; a missing state directory is fine', async () => {
    const dir = await tempDir();
    await mkdir(join(dir, 'real'));
    await mkdir(join(dir, 'out'));
    await symlink(join(dir, 'real'), join(dir, 'link'));
    expect(checkDirectories(join(dir, 'link'), undefined)).toBe(
      `unsafe_directory: ${join(dir, 'link')} is a symbolic link; refusing to write through it; nothing written`,
    );
    expect(checkDirectories(join(dir, 'out'), join(dir, 'link'))).toBe(
      `unsafe_directory: ${join(dir, 'link')} is a symbolic link; refusing to write through it; nothing written`,
    );
    expect(checkDirectories(join(dir, 'out'), join(dir, 'no-state-yet'))).toBeUndefined();
    expect(checkDirectories(join(dir, 'out'), undefined)).toBeUndefined();
    // A textfile directory gone since the command checked it is not made again: node_exporter's, not ours.
    expect(checkDirectories(join(dir, 'gone'), undefined)).toMatch(
      /^write_failed: cannot open the directory \S+\/gone: ENOENT[^\n]*; nothing written$/,
    );
    expect((await readdir(dir)).sort()).toEqual(['link', 'out', 'real']);
  });
});
