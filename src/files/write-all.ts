import { FILE_STEPS, type FileSteps } from './file-steps.js';

/** Writes all of `data` to `fd`: a short write is retried for the rest, and an error is thrown. */
export function writeAll(fd: number, data: string | Buffer, steps: FileSteps = FILE_STEPS): void {
  let offset = 0;
  let bytes: Buffer;
  if (typeof data === 'string') {
    // A text is handed to write(2) as it is: a Buffer made of it first cost the daemon mode a tenth of
    // a millisecond a sample on the H200 host (24 KiB). Only a short write makes the Buffer, to go on.
    const length = Buffer.byteLength(data);
    if (length === 0) return;
    offset = steps.writeText(fd, data);
    if (offset <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    if (offset >= length) return;
    bytes = Buffer.from(data);
  } else bytes = data;
  while (offset < bytes.length) {
    const written = steps.write(fd, bytes, offset, bytes.length - offset);
    // write(2) returns 0 only for a zero-length request; guard against spinning all the same.
    if (written <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    offset += written;
  }
}
