import { describe, expect, it } from 'vitest';
import { visibleGpus } from '../../src/run/cuda-visible.js';

// The two GPUs of the h200x2 capture, as nvidia-smi lists them.
const LISTED = [
  { gpu: '0', uuid: 'GPU-d9041e44-56fa-e7d7-44d1-12664904be3d' },
  { gpu: '1', uuid: 'GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb' },
];

describe('visibleGpus (CUDA_VISIBLE_DEVICES)', () => {
  it.each([
    ['1', ['1']],
    ['1,0', ['1', '0']],
    [' 0 , 1 ', ['0', '1']],
    ['GPU-697eaabb-1770-71c5-54ee-1d10ad7a70cb', ['1']],
    ['GPU-697e', ['1']],
    ['gpu-D904', ['0']],
    ['MIG-GPU-d9041e44-56fa-e7d7-44d1-12664904be3d/1/0', ['0']],
    ['', []],
    ['-1', []],
    ['0,7,1', ['0']],
    ['0,,1', ['0']],
  ])('%j -> %j', (value, gpus) => expect(visibleGpus(value, LISTED).gpus).toEqual(gpus));

  it('says why an entry ends the list, as CUDA stops there', () => {
    expect(visibleGpus('0,7,1', LISTED).notes).toEqual([
      'CUDA_VISIBLE_DEVICES entry "7" names no GPU nvidia-smi lists: CUDA ignores it and the entries after it',
    ]);
    expect(visibleGpus('GPU-', LISTED).notes).toEqual([
      'CUDA_VISIBLE_DEVICES entry "GPU-" matches more than one GPU: CUDA ignores it and the entries after it',
    ]);
  });

  it('leaves a MIG device named by its own UUID unplaced: the variable does not say its GPU', () =>
    expect(visibleGpus('MIG-5c89d9a6-8f3b-5f5a-9f6a-2c1e4d3b2a10', LISTED)).toEqual({
      gpus: [],
      notes: [],
      unplaced: ['MIG-5c89d9a6-8f3b-5f5a-9f6a-2c1e4d3b2a10'],
    }));
});
