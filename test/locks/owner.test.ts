import { describe, expect, it } from 'vitest';
import { currentOwner, formatOwner, isAlive, parseOwner, parseStartTicks } from '../../src/locks/owner.js';

describe('parseStartTicks', () => {
  // /proc/PID/stat lines from a live host; field 22 is the start time.
  it.each([
    [
      'plain name',
      '52915 (awk) R 52913 52913 52893 0 -1 4194304 97 0 0 0 0 0 0 0 20 0 1 0 7183307 2646016 231 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0',
      '7183307',
    ],
    [
      'a name with spaces and parentheses',
      '4242 (a) b (c) S 1 4242 4242 0 -1 4194560 500 0 0 0 3 1 0 0 20 0 1 0 123456 12345678 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0',
      '123456',
    ],
    ['cut short', '4242 (nvidia-smi) S 1 4242', undefined],
    ['no name at all', 'garbage', undefined],
    // Fields are counted from the name's ")": without one there is no field 22, however many numbers follow.
    ['numbers but no name', '4242 a S 1 4242 4242 0 -1 4194560 500 0 0 0 3 1 0 0 20 0 1 0 123456 1 1', undefined],
    ['a start time that is not a number', '4242 (a) S 1 4242 4242 0 -1 4194560 500 0 0 0 3 1 0 0 20 0 1 0 12x3 1 1', undefined],
    ['a start time with junk before it', '4242 (a) S 1 4242 4242 0 -1 4194560 500 0 0 0 3 1 0 0 20 0 1 0 x123 1 1', undefined],
    ['a ")" first: the name is empty', ') S 1 4242 4242 0 -1 4194560 500 0 0 0 3 1 0 0 20 0 1 0 777 1 1', '777'],
  ])('%s', (_title, stat, expected) => expect(parseStartTicks(stat)).toBe(expected));
});

describe('parseOwner', () => {
  const line = '4242 7183307 0ada8b38-ad0c-4b66-886d-06928ba8228a\n';
  it('reads what formatOwner writes', () => expect(formatOwner(parseOwner(line)!)).toBe(line));
  it.each([
    ['empty (created, never written)', ''],
    ['cut short by a full disk', '4242 71833'],
    ['the old format: a pid alone', '4242\n'],
    ['pid 0', '0 7183307 0ada8b38\n'],
    ['junk', '@@@ ??? ###\n'],
    ['junk before an owner line', 'x4242 7183307 0ada8b38\n'],
    ['more after an owner line', '4242 7183307 0ada8b38\n4243 1 b\n'],
  ])('%s is no owner', (_title, text) => expect(parseOwner(text)).toBeUndefined());
});

describe('isAlive', () => {
  const me = currentOwner();
  it('this process is alive', () => expect(isAlive(me)).toBe(true));
  it('its pid with another start time is not (a pid reused)', () =>
    expect(isAlive({ ...me, startTicks: String(Number(me.startTicks) + 1) })).toBe(false));
  it('its pid and start time on another boot are not', () =>
    expect(isAlive({ ...me, bootId: '00000000-0000-0000-0000-000000000000' })).toBe(false));
  it('a pid no process has is not', () => expect(isAlive({ ...me, pid: 4_194_304 + 1 })).toBe(false));
});
