import { describe, expect, it } from 'vitest';
import { boundedLines } from '../../../src/sources/nvidia-smi/lines.js';

const split = async (chunks: string[], max = 10) => {
  const lines: string[] = [];
  for await (const line of boundedLines(
    (async function* () {
      yield* chunks;
    })(),
    max,
  ))
    lines.push(line);
  return lines;
};

describe('boundedLines', () => {
  it.each([
    ['lines across chunks', ['0, GPU-a\n1, G', 'PU-b\n'], ['0, GPU-a', '1, GPU-b']],
    ['CRLF ends a line like LF', ['a\r\nb\n'], ['a', 'b']],
    ['CRLF ends a longer line too, the CR alone dropped', ['abc\r\n'], ['abc']],
    ['a last line without a newline is given too', ['a\nexit'], ['a', 'exit']],
    ['empty lines stay', ['\n\na\n'], ['', '', 'a']],
    ['an over-long line in one chunk is cut', ['0123456789abc\nok\n'], ['0123456789', 'ok']],
    [
      'an over-long line across chunks is cut, its rest dropped up to the newline',
      ['01234567', '89abcdef', 'ghij', 'kl\nok\n'],
      ['0123456789', 'ok'],
    ],
    ['a flood without any newline gives one cut line', ['x'.repeat(8), 'x'.repeat(8), 'x'.repeat(8)], ['x'.repeat(10)]],
  ])('%s', async (_title, chunks, expected) => expect(await split(chunks)).toEqual(expected));

  it('holds no more than one line of a stream that never ends a line', async () => {
    let pulled = 0;
    async function* flood() {
      for (; pulled < 10_000; pulled++) yield 'y'.repeat(1000);
    }
    const lines: string[] = [];
    for await (const line of boundedLines(flood(), 16 * 1024)) lines.push(line);
    expect([pulled, lines.length, lines[0]?.length]).toEqual([10_000, 1, 16 * 1024]);
  });
});
