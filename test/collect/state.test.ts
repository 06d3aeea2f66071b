import { readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { render } from '../../src/exposition/render.js';
import { buildFamilies } from '../../src/metrics/metrics.js';
import { readState, validState, writeState, type CollectorState } from '../../src/collect/state.js';
import { collectCapture } from '../support/capture-replay.js';
import { tempDir } from '../support/helpers.js';
import { fillLeaving, smallTmpfs } from '../support/small-tmpfs.js';

const GPU = { gpu: '0', uuid: 'GPU-d9041e44-0000-0000-0000-000000000000', busId: '00000000:00:06.0' };
const NAMES = {
  index: 'index',
  uuid: 'uuid',
  'temperature.gpu': 'temperature.gpu',
  'clocks.current.sm': 'clocks.sm',
  'memory.reserved': '',
};

describe('validState', () => {
  it("keeps names that are the field's own (query name, alias, or none) and well-formed GPUs", () => {
    const state = { driverVersion: '580.159.04', names: NAMES, gpus: [GPU, { ...GPU, gpu: '', uuid: '' }] };
    expect(validState(state)).toEqual(state);
  });

  it.each<[string, unknown]>([
    ['a field mapped to another field', { ...NAMES, 'temperature.gpu': 'power.draw' }],
    ['a field not in the table', { ...NAMES, 'no.such.field': 'no.such.field' }],
    ['a name that is not a string', { ...NAMES, 'temperature.gpu': 1 }],
    ['no uuid name', { index: 'index', 'temperature.gpu': 'temperature.gpu' }],
    ['an array', ['index', 'uuid']],
  ])('discards the names for %s', (_, names) => {
    expect(validState({ driverVersion: '580.159.04', names, gpus: [GPU] })).toEqual({ driverVersion: '580.159.04', gpus: [GPU] });
  });

  it('discards the names with a driver version that is not one', () => {
    expect(validState({ driverVersion: { v: 1 }, names: NAMES })).toEqual({});
  });

  it('keeps only GPUs fit to pass to nvidia-smi -i', () => {
    const gpus = [
      GPU,
      { ...GPU, uuid: '--help' },
      { ...GPU, busId: '0; reboot' },
      { ...GPU, gpu: 'x' },
      { gpu: '1', uuid: '', busId: '' },
      { ...GPU, extra: 1 },
      'GPU-1',
      null,
    ];
    expect(validState({ gpus }).gpus).toEqual([GPU, GPU]);
  });

  it('keeps a CUDA version with the driver it belongs to; a label value that is not one is discarded', () => {
    const cuda = { driverVersion: '580.159.04', version: '13.0' };
    expect(validState({ cuda }).cuda).toEqual(cuda);
    expect(validState({ cuda: { ...cuda, version: '' } }).cuda).toEqual({ ...cuda, version: '' });
    expect(validState({ cuda: { ...cuda, version: '13.0"} evil{' } }).cuda).toBeUndefined();
    expect(validState({ cuda: { version: '13.0' } }).cuda).toBeUndefined();
  });

  it('keeps the Xid counts and cursor; damaged ones are discarded, not carried on', () => {
    const xid = { bootId: '1c2f6a3e-52d4-4b7e-9f61-3f0c2a1d9e70', seq: 608, counts: [{ bus: '0000:00:06', xid: 79, count: 1 }] };
    expect(validState({ xid }).xid).toEqual(xid);
    expect(validState({ xid: { ...xid, counts: [{ bus: '0000:00:06', xid: 79, count: -1 }] } }).xid).toBeUndefined();
  });
});

describe('readState', () => {
  it('a planted state that maps temperature to power draw does not make temperatures report watts', async () => {
    const learned = (await collectCapture('h200x2__580.159.04__linux-idle')).state;
    const dir = await tempDir();
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ ...learned, names: { ...learned.names, 'temperature.gpu': 'power.draw' } }));
    const { collection } = await collectCapture('h200x2__580.159.04__linux-idle', { state: readState(dir) });
    const temperature = checkExposition(render(buildFamilies(collection))).samples.find(
      (s) => s.name === 'nvidia_gpu_temperature_celsius' && s.labels.gpu === '0',
    );
    expect(temperature?.value).toBe(27);
  });

  it('follows no link, does not block on a FIFO, and ignores a file over 1 MiB', async () => {
    const elsewhere = join(await tempDir(), 'state.json');
    writeFileSync(elsewhere, JSON.stringify({ driverVersion: '1.0' }));
    const [link, fifo, big] = [await tempDir(), await tempDir(), await tempDir()];
    symlinkSync(elsewhere, join(link, 'state.json'));
    await execa('mkfifo', [join(fifo, 'state.json')]);
    writeFileSync(join(big, 'state.json'), `{"driverVersion": "1.0", "pad": "${'x'.repeat(1024 * 1024)}"}`);
    expect([readState(link), readState(fifo), readState(big)]).toEqual([{}, {}, {}]);
  });
});

describe('writeState', () => {
  it('replaces a link planted at state.json, never its target', async () => {
    const dir = await tempDir();
    const victim = join(await tempDir(), 'shadow');
    writeFileSync(victim, 'secret\n', { mode: 0o600 });
    symlinkSync(victim, join(dir, 'state.json'));
    expect(await writeState(dir, {}, { driverVersion: '1.0' })).toBeUndefined();
    expect([readFileSync(victim, 'utf8'), statSync(victim).mode & 0o777]).toEqual(['secret\n', 0o600]);
    expect(readState(dir)).toEqual({ driverVersion: '1.0' });
  });

  it('on a nearly full disk leaves the previous state.json whole and no temp file', async () => {
    const disk = await smallTmpfs(128 * 1024);
    const before: CollectorState = { driverVersion: '1.0' };
    expect(await writeState(disk, {}, before)).toBeUndefined();
    // More than the one page left: a short write must not be published.
    const after: CollectorState = { driverVersion: '1.0', gpus: Array.from({ length: 100 }, (_, i) => ({ ...GPU, gpu: String(i) })) };
    expect(JSON.stringify(after).length).toBeGreaterThan(4096);
    fillLeaving(disk, 4096);
    expect(await writeState(disk, before, after)).toMatch(/^state not saved in \S+: ENOSPC/);
    expect(readState(disk)).toEqual(before);
    expect(readdirSync(disk).sort()).toEqual(['filler', 'state.json']);
  });
});
