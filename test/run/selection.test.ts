import { describe, expect, it } from 'vitest';
import { chooseGpus } from '../../src/run/selection.js';

const LISTED = [
  { gpu: '0', uuid: 'GPU-a' },
  { gpu: '1', uuid: 'GPU-b' },
  { gpu: '2', uuid: 'GPU-c' },
];

describe("the job's GPUs", () => {
  it('CUDA_VISIBLE_DEVICES first, even where the process tree says otherwise; set but empty: none', () => {
    expect(chooseGpus(LISTED, '2,0', new Set(['GPU-b']))).toEqual({
      gpus: [LISTED[0], LISTED[2]],
      selection: 'CUDA_VISIBLE_DEVICES',
      notes: [],
    });
    expect(chooseGpus(LISTED, '', new Set(['GPU-b']))).toEqual({ gpus: [], selection: 'CUDA_VISIBLE_DEVICES', notes: [] });
  });

  it("else the GPUs of the job's process tree; else all", () => {
    expect(chooseGpus(LISTED, undefined, new Set(['GPU-b', 'GPU-z']))).toEqual({ gpus: [LISTED[1]], selection: 'process tree', notes: [] });
    expect(chooseGpus(LISTED, undefined, new Set())).toEqual({ gpus: LISTED, selection: 'all', notes: [] });
  });

  it('a MIG device the variable cannot place: the process tree decides, and the summary says why', () => {
    const chosen = chooseGpus(LISTED, 'MIG-0f3c', new Set(['GPU-c']));
    expect([chosen.gpus, chosen.selection]).toEqual([[LISTED[2]], 'process tree']);
    expect(chosen.notes).toEqual(["CUDA_VISIBLE_DEVICES names MIG devices (MIG-0f3c): their GPUs are found by the job's processes"]);
  });
});
