// The text of report and export, written to stdout as the reader takes it (one way for both).

/**
 * Writes each piece in turn, waiting while the reader is behind (a pager, a slow pipe) rather than
 * buffering the rest; stops once the stream failed or closed (EPIPE: the launcher stops quietly on
 * that error, and fails on others), where no drain would ever come.
 */
export async function writePieces(out: NodeJS.WritableStream, pieces: Iterable<string> | AsyncIterable<string>): Promise<void> {
  let gone = (out as { destroyed?: boolean }).destroyed === true;
  const stop = () => {
    gone = true;
  };
  out.on('error', stop);
  out.on('close', stop);
  try {
    for await (const piece of pieces) {
      if (gone) break;
      if (out.write(piece)) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          out.off('drain', done);
          out.off('error', done);
          out.off('close', done);
          resolve();
        };
        out.once('drain', done);
        out.once('error', done);
        out.once('close', done);
      });
    }
  } finally {
    out.off('error', stop);
    out.off('close', stop);
  }
}
