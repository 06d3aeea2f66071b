import { describe, expect, it } from 'vitest';
import { failedCollection, toCollection, type GpuRows } from '../src/collection.js';

describe('toCollection', () => {
  it('a GPU lost or unparsable is down with its reason and a warning that says why; a row naming no GPU is a warning only', () => {
    const gpus: GpuRows = {
      samples: [],
      problems: [
        { gpu: '2', uuid: 'GPU-c', message: 'row has 3 cells, header has 4', line: `2, GPU-c, ${'x'.repeat(200)}` },
        { uuid: 'GPU-d', message: 'no index', line: 'GPU-d' },
        { gpu: '4', message: 'no uuid', line: '4' },
      ],
      lost: [
        { gpu: '1', uuid: 'GPU-b', busId: '00000000:00:07.0', message: 'Unknown Error' },
        { gpu: '', uuid: '', busId: '00000000:00:08.0', message: 'exit 15' },
      ],
      fields: [],
    };
    const { collection, warnings } = toCollection(gpus, undefined, { durationSeconds: 0.5, nowSeconds: 1700000000.9 });
    expect(warnings).toEqual([
      'GPU 1 (GPU-b) did not answer: Unknown Error',
      'GPU 00000000:00:08.0 (uuid unknown) did not answer: exit 15',
      `nvidia-smi --query-gpu: row has 3 cells, header has 4: "${`2, GPU-c, ${'x'.repeat(200)}`.slice(0, 120)}"`,
      'nvidia-smi --query-gpu: no index: "GPU-d"',
      'nvidia-smi --query-gpu: no uuid: "4"',
    ]);
    expect(collection.down).toEqual([
      { gpu: '1', uuid: 'GPU-b', reason: 'gpu_lost' },
      { gpu: '', uuid: '', reason: 'gpu_lost' },
      { gpu: '2', uuid: 'GPU-c', reason: 'unparsable_output' },
    ]);
    expect(collection.health).toEqual({ durationSeconds: 0.5, lastSuccessSeconds: 1700000000 });
  });

  it('a failed collection carries its health and nothing else', () => {
    const failure = { reason: 'timeout' as const, message: 'x' };
    expect(failedCollection(failure, 2, 17)).toEqual({
      fields: [],
      samples: [],
      down: [],
      health: { failure, durationSeconds: 2, lastSuccessSeconds: 17 },
    });
  });
});
