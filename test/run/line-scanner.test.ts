import { describe, expect, it } from 'vitest';
import { lineScanner } from '../../src/run/line-scanner.js';

/** Feeds `chunks` and returns the lines scanned. */
function scan(chunks: (string | Buffer)[], maxLine?: number): string[] {
  const lines: string[] = [];
  const scanner = lineScanner((line) => lines.push(line), maxLine);
  for (const chunk of chunks) scanner.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  scanner.end();
  return lines;
}

describe('lineScanner', () => {
  it('joins lines split across chunks, and scans a last line without a newline', () =>
    expect(scan(['ste', 'p 1\nstep', ' 2\n', 'step 3'])).toEqual(['step 1', 'step 2', 'step 3']));

  it('takes CRLF as one end, and a bare CR (a progress bar) as a line end too', () =>
    expect(scan(['a\r\nb\rc\n'])).toEqual(['a', '', 'b', 'c']));

  it('decodes a character split across chunks', () => {
    const bytes = Buffer.from('é step 1\n');
    expect(scan([bytes.subarray(0, 1), bytes.subarray(1)])).toEqual(['é step 1']);
  });

  it('scans only the first maxLine characters of a long line, and the next line whole', () =>
    expect(scan(['x'.repeat(5), 'y'.repeat(20), 'z\nstep 9\n'], 8)).toEqual(['xxxxxyyy', 'step 9']));
});
