import { describe, expect, it } from 'vitest';
import { parseComputeApps } from '../../../src/sources/nvidia-smi/compute-apps.js';

const MIB = 1024 * 1024;
const U0 = 'GPU-d9041e44-56fa-e7d7-44d1-12664904be3d';

describe('parseComputeApps', () => {
  it('reads the recorded H200 rows', () => {
    const stdout = `${U0}, 2006, python3, 3682\n${U0}, 2008, python3, 518\n`;
    expect(parseComputeApps(stdout)).toEqual({
      apps: [
        { uuid: U0, pid: 2006, name: 'python3', memoryBytes: 3682 * MIB },
        { uuid: U0, pid: 2008, name: 'python3', memoryBytes: 518 * MIB },
      ],
      skipped: 0,
    });
  });
  it('keeps commas inside a name: uuid and pid from the left, memory from the right', () => {
    const { apps } = parseComputeApps(`${U0}, 7, python train.py --tags a, b, c, 100\n`);
    expect(apps).toEqual([{ uuid: U0, pid: 7, name: 'python train.py --tags a, b, c', memoryBytes: 100 * MIB }]);
  });
  it('joins a name split by a newline', () => {
    const { apps } = parseComputeApps(`${U0}, 7, first\nsecond, 100\n${U0}, 8, x, 1\n`);
    expect(apps.map((a) => [a.name, a.pid])).toEqual([
      ['first\nsecond', 7],
      ['x', 8],
    ]);
  });
  it('keeps a process whose memory is [N/A] (Windows WDDM) without memory', () => {
    expect(parseComputeApps(`${U0}, 7, C:\\app.exe, [N/A]\n`).apps).toEqual([{ uuid: U0, pid: 7, name: 'C:\\app.exe' }]);
  });
  it('skips and counts rows that do not fit, keeping the others', () => {
    expect(parseComputeApps(`garbage line\n${U0}, 7, x, lots\n${U0}, 8, y, 2\n`)).toEqual({
      apps: [{ uuid: U0, pid: 8, name: 'y', memoryBytes: 2 * MIB }],
      skipped: 2,
    });
  });
  it('CRLF lines (nvidia-smi on Windows) read as LF ones', () =>
    expect(parseComputeApps(`${U0}, 7, python, 100\r\n${U0}, 8, python, 200\r\n`).apps.map((a) => [a.pid, a.memoryBytes])).toEqual([
      [7, 100 * MIB],
      [8, 200 * MIB],
    ]));
  it('empty output is no rows, nothing skipped', () => {
    expect(parseComputeApps('')).toEqual({ apps: [], skipped: 0 });
    expect(parseComputeApps('\n')).toEqual({ apps: [], skipped: 0 });
  });
  it('skips a record without a memory cell, with an error or a non-integer in it', () => {
    const records = ['python', 'python, [Unknown Error]', 'python, 12.5', 'python, 12x', 'python, x12'].map(
      (rest) => `${U0}, 7, ${rest}\n`,
    );
    expect(parseComputeApps(`${records.join('')}${U0}, 9, ok, 1\n`)).toEqual({
      apps: [{ uuid: U0, pid: 9, name: 'ok', memoryBytes: MIB }],
      skipped: 5,
    });
  });
  it('no processes is no rows', () => expect(parseComputeApps('No running processes found\n')).toEqual({ apps: [], skipped: 0 }));
});
