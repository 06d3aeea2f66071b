import { describe, expect, it } from 'vitest';
import { addXidEvents, countNvmlXids, countXids, MAX_COUNTS, validXidState, xidSeries, type XidState } from '../../src/xid/count.js';
import type { KmsgRecord } from '../../src/xid/parse.js';

const xid = (seq: number, code: number, bus = '0000:00:06'): KmsgRecord => ({
  seq,
  message: `NVRM: Xid (PCI:${bus}): ${code}, pid=1, name=python3`,
});
const other = (seq: number): KmsgRecord => ({ seq, message: 'NVRM: Persistence mode is deprecated' });
const BOOT = '6b5a1f3e-0000-4000-8000-000000000001';

describe('countXids', () => {
  const log = [other(1), xid(2, 79), other(3), xid(4, 13, '0000:00:07')];

  it('first run: counts every Xid in the log and keeps the last one counted as the cursor', () => {
    expect(countXids(undefined, log, BOOT)).toEqual({
      bootId: BOOT,
      seq: 4,
      counts: [
        { bus: '0000:00:06', xid: 79, count: 1 },
        { bus: '0000:00:07', xid: 13, count: 1 },
      ],
    });
  });

  it('second run over the same log: nothing counted twice, the state does not change', () => {
    const first = countXids(undefined, log, BOOT);
    expect(countXids(first, [...log, other(5)], BOOT)).toEqual(first);
    // The very object: the daemon mode saves the state when it is another one, so an unchanged look saves nothing.
    expect(countXids(first, [other(5)], BOOT)).toBe(first);
    expect(countXids(first, [], BOOT)).toBe(first);
    expect(countXids(first, [], 'another-boot')).not.toBe(first);
  });

  it('a quiet host: a second run over exactly the same log, its newest record the one counted, adds nothing', () => {
    const first = countXids(undefined, log, BOOT);
    expect(first.seq).toBe(log.at(-1)!.seq);
    expect(countXids(first, log, BOOT)).toBe(first);
  });

  // Issue 33: a cursor ahead of the same boot's log was taken for a reboot: the whole log was counted
  // again on top, doubling every count.
  it("a cursor ahead of its own boot's log is garbage: re-derived from the log, nothing counted twice", () => {
    const first = countXids(undefined, log, BOOT);
    const garbage = { ...first, seq: 5000 };
    expect(countXids(garbage, log, BOOT)).toEqual(first);
    // The counts never go down (a reset to Prometheus): the larger of the state's and the log's.
    const more = { ...garbage, counts: [{ bus: '0000:00:06', xid: 79, count: 3 }] };
    expect(countXids(more, log, BOOT).counts).toEqual([
      { bus: '0000:00:06', xid: 79, count: 3 },
      { bus: '0000:00:07', xid: 13, count: 1 },
    ]);
    // Then the next line counts once.
    expect(countXids(countXids(garbage, log, BOOT), [...log, xid(6, 79)], BOOT).counts).toContainEqual({
      bus: '0000:00:06',
      xid: 79,
      count: 2,
    });
  });

  it('a new Xid line adds one', () => {
    const first = countXids(undefined, log, BOOT);
    const second = countXids(first, [...log, other(5), xid(6, 79)], BOOT);
    expect(second.counts).toContainEqual({ bus: '0000:00:06', xid: 79, count: 2 });
    expect(second.seq).toBe(6);
  });

  it('a log with no Xid keeps the cursor at -1, so no later line is taken for an old one', () => {
    expect(countXids(undefined, [other(1), other(2)], BOOT)).toEqual({ bootId: BOOT, seq: -1, counts: [] });
  });

  it('a new boot id: the log restarted, every Xid in it is new, the counts carry over', () => {
    const before: XidState = { bootId: BOOT, seq: 900, counts: [{ bus: '0000:00:06', xid: 79, count: 3 }] };
    const after = countXids(before, [other(1), xid(2, 79)], 'another-boot');
    expect(after).toEqual({ bootId: 'another-boot', seq: 2, counts: [{ bus: '0000:00:06', xid: 79, count: 4 }] });
  });

  it('no boot id to tell, but the newest record is older than the cursor: the log restarted too', () => {
    const before: XidState = { seq: 900, counts: [{ bus: '0000:00:06', xid: 79, count: 3 }] };
    expect(countXids(before, [xid(2, 79), other(3)], undefined).counts).toEqual([{ bus: '0000:00:06', xid: 79, count: 4 }]);
  });

  it(`keeps at most ${MAX_COUNTS} distinct (GPU, Xid) pairs, and still counts the known ones`, () => {
    const flood = Array.from({ length: MAX_COUNTS + 10 }, (_, i) => xid(i + 1, i + 1));
    const after = countXids(undefined, [...flood, xid(MAX_COUNTS + 20, 1)], BOOT);
    expect(after.counts).toHaveLength(MAX_COUNTS);
    expect(after.counts[0]).toEqual({ bus: '0000:00:06', xid: 1, count: 2 });
  });
});

describe('the time of the last Xid (nvidia_gpu_exporter names it)', () => {
  const at = (seq: number, code: number, seconds: number): KmsgRecord => ({ ...xid(seq, code), usec: seconds * 1e6 + 999_999 });
  const BTIME = 1_764_000_000;

  it("is the boot time plus the record's time since boot, the latest of a code's lines, kept in the state", () => {
    const first = countXids(undefined, [at(1, 79, 100), at(2, 13, 150), at(3, 79, 120)], BOOT, BTIME);
    expect(first.counts).toEqual([
      { bus: '0000:00:06', xid: 79, count: 2, last: BTIME + 120 },
      { bus: '0000:00:06', xid: 13, count: 1, last: BTIME + 150 },
    ]);
    const later = countXids(first, [at(4, 79, 900)], BOOT, BTIME);
    expect(later.counts[0]).toEqual({ bus: '0000:00:06', xid: 79, count: 3, last: BTIME + 900 });
    expect(validXidState(JSON.parse(JSON.stringify(later)))).toEqual(later);
    expect(xidSeries(later.counts, [{ gpu: '0', uuid: 'GPU-0', busId: '00000000:00:06.0' }])).toEqual([
      { gpu: '0', uuid: 'GPU-0', xid: 13, count: 1, lastSeconds: BTIME + 150 },
      { gpu: '0', uuid: 'GPU-0', xid: 79, count: 3, lastSeconds: BTIME + 900 },
    ]);
  });

  it('is unknown without the boot time, and a count without it stays valid', () => {
    const state = countXids(undefined, [at(1, 79, 100)], BOOT);
    expect(state.counts).toEqual([{ bus: '0000:00:06', xid: 79, count: 1 }]);
    expect(validXidState({ seq: 1, counts: [{ bus: '0000:00:06', xid: 79, count: 1, last: -5 }] })).toBeUndefined();
  });
});

describe("countNvmlXids and the log's backlog (NVML counting while the log cannot be read)", () => {
  const before: XidState = { bootId: BOOT, seq: 4, counts: [{ bus: '0000:00:06', xid: 79, count: 1 }] };

  it("adds NVML's events and marks the log's backlog counted", () => {
    expect(countNvmlXids(before, [{ bus: '0000:00:06', xid: 79 }], BOOT)).toEqual({
      ...before,
      backlogCounted: true,
      counts: [{ bus: '0000:00:06', xid: 79, count: 2 }],
    });
  });

  it('nothing new: the very same state, so the daemon writes none', () => {
    const counted = countNvmlXids(before, [], BOOT);
    expect(countNvmlXids(counted, [], BOOT)).toBe(counted);
  });

  it("in a new boot the old boot's cursor is dropped", () => {
    expect(countNvmlXids(before, [], 'another-boot')).toMatchObject({ bootId: 'another-boot', seq: -1, backlogCounted: true });
  });

  it('the next read of the log moves the cursor past its backlog without counting it, then counts anew', () => {
    const counted = countNvmlXids(before, [{ bus: '0000:00:06', xid: 79 }], BOOT);
    // Seq 6 is the Xid NVML already counted; 7 is a line that is not an Xid.
    const read = countXids(counted, [xid(2, 79), other(3), xid(4, 13), other(5), xid(6, 79), other(7)], BOOT);
    expect(read).toEqual({ bootId: BOOT, seq: 7, counts: [{ bus: '0000:00:06', xid: 79, count: 2 }] });
    expect(countXids(read, [xid(6, 79), other(7), xid(8, 79)], BOOT).counts).toEqual([{ bus: '0000:00:06', xid: 79, count: 3 }]);
  });

  it('a log of another boot is new: all of it counts', () => {
    const counted = countNvmlXids(before, [], BOOT);
    expect(countXids(counted, [xid(1, 79)], 'another-boot').counts).toEqual([{ bus: '0000:00:06', xid: 79, count: 2 }]);
  });
});

describe('addXidEvents (the kernel log, and NVML while it cannot be read)', () => {
  it('adds each event once to the same counts, without a kernel log', () => {
    const counts = [{ bus: '0000:00:06', xid: 79, count: 1 }];
    expect(
      addXidEvents(counts, [
        { bus: '0000:00:06', xid: 79 },
        { bus: '0000:00:07', xid: 48 },
      ]),
    ).toEqual([
      { bus: '0000:00:06', xid: 79, count: 2 },
      { bus: '0000:00:07', xid: 48, count: 1 },
    ]);
    expect(counts).toEqual([{ bus: '0000:00:06', xid: 79, count: 1 }]);
  });
});

describe('xidSeries', () => {
  const gpus = [
    { gpu: '0', uuid: 'GPU-a', busId: '00000000:00:06.0' },
    { gpu: '1', uuid: 'GPU-b', busId: '00000000:00:07.0' },
  ];

  it('names each count by the GPU at its PCI address, the first listed winning', () => {
    const counts = [
      { bus: '0000:00:07', xid: 13, count: 2 },
      { bus: '0000:00:06', xid: 79, count: 1 },
    ];
    expect(xidSeries(counts, [...gpus, { gpu: '9', uuid: 'GPU-old', busId: '00000000:00:06.0' }])).toEqual([
      { gpu: '0', uuid: 'GPU-a', xid: 79, count: 1 },
      { gpu: '1', uuid: 'GPU-b', xid: 13, count: 2 },
    ]);
  });

  it('counts of GPUs no one lists have empty gpu and uuid, and are added into one series per Xid', () => {
    const counts = [
      { bus: '0000:81:00', xid: 79, count: 1 },
      { bus: '0000:82:00', xid: 79, count: 2 },
    ];
    expect(xidSeries(counts, gpus)).toEqual([{ gpu: '', uuid: '', xid: 79, count: 3 }]);
  });

  it('GPUs to zero get a 0 for each hardware Xid they have not logged; other GPUs get none', () => {
    const series = xidSeries([{ bus: '0000:00:06', xid: 79, count: 1 }], gpus, [gpus[0]!]);
    expect(series.map((s) => `${s.gpu}/${s.xid}=${s.count}`)).toEqual([
      '0/48=0',
      '0/63=0',
      '0/64=0',
      '0/74=0',
      '0/79=1',
      '0/92=0',
      '0/94=0',
      '0/95=0',
    ]);
  });
});

describe('validXidState', () => {
  const good = { bootId: BOOT, seq: 4, counts: [{ bus: '0000:00:06', xid: 79, count: 1 }] };
  it.each([
    ['a good state', good, good],
    ['a cursor that is not a number', { ...good, seq: '4' }, undefined],
    ['a count of zero', { ...good, counts: [{ bus: '0000:00:06', xid: 79, count: 0 }] }, undefined],
    ['a bus that is no PCI address', { ...good, counts: [{ bus: '../x', xid: 79, count: 1 }] }, undefined],
    ['the same pair twice (a series would double)', { ...good, counts: [...good.counts, ...good.counts] }, undefined],
    ['a boot id with odd characters', { ...good, bootId: 'a\nb' }, undefined],
    ["NVML's mark on the log's backlog", { ...good, backlogCounted: true }, { ...good, backlogCounted: true }],
    ['a mark that is not true', { ...good, backlogCounted: 'yes' }, undefined],
  ])('%s', (_, value, expected) => expect(validXidState(value)).toEqual(expected));
});

it('series are in GPU index order as numbers (10 after 9), a GPU nobody lists first', () => {
  const gpus = ['10', '9', '0'].map((gpu, i) => ({ gpu, uuid: `GPU-${gpu}`, busId: `00000000:0${i + 1}:00.0` }));
  const counts = [
    { bus: '0000:01:00', xid: 13, count: 1 },
    { bus: '0000:02:00', xid: 79, count: 1 },
    { bus: '0000:02:00', xid: 13, count: 2 },
    { bus: '0000:03:00', xid: 13, count: 1 },
    { bus: '0000:ff:00', xid: 31, count: 1 },
  ];
  expect(xidSeries(counts, gpus).map((s) => `${s.gpu}/${s.xid}`)).toEqual(['/31', '0/13', '9/13', '9/79', '10/13']);
});
