/**
 * Text chunks -> lines, none longer than `maxChars`: a longer one is cut there and the rest of it,
 * up to the next newline, dropped. readline keeps a line whole however long it grows, so a child
 * printing without newlines would take all our memory. A final line without a newline is given too
 * (nvidia-smi's last words before it exits); "\r\n" ends a line like "\n".
 */
export async function* boundedLines(chunks: AsyncIterable<string>, maxChars: number): AsyncGenerator<string> {
  let partial = '';
  let dropping = false;
  const cut = (line: string) => (line.endsWith('\r') ? line.slice(0, -1) : line).slice(0, maxChars);
  for await (const chunk of chunks) {
    let start = 0;
    for (let end = chunk.indexOf('\n'); end >= 0; end = chunk.indexOf('\n', start)) {
      const line = partial + chunk.slice(start, end);
      start = end + 1;
      partial = '';
      if (dropping) dropping = false;
      else yield cut(line);
    }
    if (dropping) continue;
    partial += chunk.slice(start);
    if (partial.length > maxChars) {
      yield cut(partial);
      partial = '';
      dropping = true;
    }
  }
  if (partial !== '' && !dropping) yield cut(partial);
}
