import { describe, expect, it } from 'vitest';
import { parseSeries } from '../../../src/sources/nvidia-smi/series-csv.js';

describe('parseSeries', () => {
  it('needs timestamp, index and utilization.gpu', () => {
    expect(parseSeries('index, power.draw [W]\n0, 70 W\n')).toEqual({
      error: expect.stringMatching(/needs timestamp, index and utilization.gpu/),
    });
  });
  it('takes any column set with them, with or without units, and skips rows that do not fit', () => {
    const parsed = parseSeries(
      'timestamp, index, utilization.gpu\n2026/11/29 18:23:15.400, 0, 3\ntimestamp, index, utilization.gpu\n2026/11/29 18:23:15.600, 0, [N/A]\n2026/11/29 18:23:15.800, 0, 5\n',
    );
    expect(parsed).toMatchObject({
      skipped: 2,
      samples: [
        { gpu: '0', utilization: 3 },
        { gpu: '0', utilization: 5 },
      ],
    });
  });
});
