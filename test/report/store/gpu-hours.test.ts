import { describe, expect, it } from 'vitest';
import { GpuHourRows, HourSlots } from '../../../src/report/store/gpu-hours.js';

// A GPU's answered hours as rows of one array: counts add up, the other answers are taken as given,
// an hour not answered is not there, and one the report did not name at the start still has a row.

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 0, 1);

describe('GpuHourRows', () => {
  it('adds, sets, and reads back only the hours answered, in the order the hours were named', () => {
    const slots = new HourSlots([T0, T0 + HOUR, T0 + 2 * HOUR]);
    const rows = new GpuHourRows(slots);
    rows.take(T0 + 2 * HOUR, 'samples', 100);
    rows.take(T0 + 2 * HOUR, 'samples', 140);
    rows.take(T0 + 2 * HOUR, 'memMax', 3);
    rows.take(T0 + 2 * HOUR, 'memMax', 2);
    rows.take(T0, 'reservedRead', 1);
    rows.take(T0, 'reservedRead', 2);
    const hours = [...rows.entries()];
    expect(hours.map(([hour]) => hour)).toEqual([T0, T0 + 2 * HOUR]);
    expect(hours[0]![1]).toMatchObject({ samples: 0, utilN: 0, reservedRead: 3, memMax: undefined });
    expect(hours[1]![1]).toMatchObject({ samples: 240, memMax: 2, reservedRead: undefined, tempMax: undefined });
  });

  it('makes a row for an hour named after its rows were made, keeping the others', () => {
    const slots = new HourSlots([T0]);
    const rows = new GpuHourRows(slots);
    rows.take(T0, 'tempMax', 70);
    rows.take(T0 + 5 * HOUR, 'tempMax', 71);
    expect([...rows.entries()].map(([hour, h]) => [hour, h.tempMax])).toEqual([
      [T0, 70],
      [T0 + 5 * HOUR, 71],
    ]);
    rows.clear();
    expect([...rows.entries()]).toEqual([]);
  });
});
