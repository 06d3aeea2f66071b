import { StringDecoder } from 'node:string_decoder';

/** The longest line scanned for marks: a job printing a megabyte without a newline costs no more than this. */
export const MAX_SCANNED_LINE = 4096;

/**
 * Splits a byte stream into lines for scanning, on the side of the copy that passes the bytes through:
 * it only reads the chunks. A line longer than `maxLine` is scanned by its first `maxLine`
 * characters; the rest until the newline is skipped, so memory stays bounded. CR before LF is dropped,
 * and a bare CR (a progress bar redrawing its line) ends a line too.
 */
export function lineScanner(onLine: (line: string) => void, maxLine = MAX_SCANNED_LINE) {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let skipping = false;
  const take = (text: string) => {
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      if (!skipping) onLine(pending + text.slice(from, Math.min(i, from + maxLine - pending.length)));
      pending = '';
      skipping = false;
      from = i + 1;
    }
    if (skipping) return;
    pending += text.slice(from, from + maxLine - pending.length);
    if (pending.length >= maxLine) {
      onLine(pending);
      pending = '';
      skipping = true;
    }
  };
  return {
    push: (chunk: Buffer) => take(decoder.write(chunk)),
    /** The stream ended: a last line without a newline is scanned too. */
    end: () => {
      take(decoder.end());
      if (pending !== '' && !skipping) onLine(pending);
      pending = '';
    },
  };
}
