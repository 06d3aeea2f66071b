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
  it('reads every column it knows, with units, as local time to the millisecond', () => {
    const header =
      'timestamp, index, utilization.gpu [%], power.draw.instant [W], enforced.power.limit [W], clocks.sm [MHz], clocks.max.sm [MHz], clocks_event_reasons.active';
    const row = '2026/11/29 18:23:15.4, 1, 97 %, 612.50 W, 700.00 W, 1980 MHz, 1980 MHz, 0x0000000000000004';
    expect(parseSeries(`${header}\r\n\n${row}\r\n  \n`)).toEqual({
      skipped: 0,
      samples: [
        {
          time: new Date(2026, 10, 29, 18, 23, 15, 400).getTime(),
          gpu: '1',
          utilization: 97,
          powerW: 612.5,
          powerLimitW: 700,
          smClockMHz: 1980,
          smClockMaxMHz: 1980,
          reasons: 4n,
        },
      ],
    });
  });
  it('a timestamp without milliseconds is on the second', () =>
    expect(parseSeries('timestamp, index, utilization.gpu\n2026/01/02 03:04:05, 0, 1\n')).toEqual({
      skipped: 0,
      samples: [{ time: new Date(2026, 0, 2, 3, 4, 5, 0).getTime(), gpu: '0', utilization: 1 }],
    }));
  it.each([
    ['a timestamp with junk around it', 'x2026/01/02 03:04:05, 0, 1'],
    ['a timestamp with a zone after it', '2026/01/02 03:04:05 UTC, 0, 1'],
    ['a utilization that is not a number', '2026/01/02 03:04:05, 0, 1x'],
    ['a utilization with junk before it', '2026/01/02 03:04:05, 0, x1'],
    ['a utilization with a second decimal point', '2026/01/02 03:04:05, 0, 1.5.5'],
    ['a row with a cell too many', '2026/01/02 03:04:05, 0, 1, 2'],
  ])('skips %s', (_, row) => expect(parseSeries(`timestamp, index, utilization.gpu\n${row}\n`)).toEqual({ samples: [], skipped: 1 }));
  it('optional cells that do not read are left out; negative and decimal values read', () => {
    const parsed = parseSeries(
      'timestamp, index, utilization.gpu, power.draw, clocks.sm, clocks_event_reasons.active\n2026/01/02 03:04:05, 0, 12.25, [N/A], -5, 4\n',
    );
    expect(parsed).toEqual({
      skipped: 0,
      samples: [{ time: new Date(2026, 0, 2, 3, 4, 5).getTime(), gpu: '0', utilization: 12.25, smClockMHz: -5 }],
    });
  });
  it('an error names the header it got, or says there was none', () => {
    expect(parseSeries('')).toEqual({ error: 'the recording needs timestamp, index and utilization.gpu columns; its header is: (empty)' });
    expect(parseSeries('index, power.draw [W]\n')).toEqual({
      error: 'the recording needs timestamp, index and utilization.gpu columns; its header is: index, power.draw [W]',
    });
  });
});
