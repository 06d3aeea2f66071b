import { createServer, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { storeClient } from '../../../src/report/store/client.js';

// The store's client over a kept-alive connection that the server closes as idle between two
// requests (Node's own http server after 5 s, a proxy after its idle timeout): the second request,
// sent on that connection, is reset before any answer. It is sent again on a new one, not reported
// as a store that cannot be reached; a connection refused or reset on a new one still is.

const ANSWER = JSON.stringify({ status: 'success', data: { resultType: 'vector', result: [] } });

/** A store on raw sockets: answers each connection's first request, resets it on its second. */
async function storeThatResetsIdleConnections(resetNew = false) {
  const connections: Socket[] = [];
  const server = createServer((socket) => {
    const index = connections.push(socket) - 1;
    let requests = 0;
    let pending = '';
    socket.on('error', () => {});
    socket.on('data', (chunk) => {
      pending += chunk.toString('latin1');
      const end = pending.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(pending)?.[1] ?? 0);
      if (end < 0 || pending.length < end + 4 + length) return;
      pending = '';
      requests++;
      if (requests > 1 || (resetNew && index === 0)) socket.resetAndDestroy();
      else
        socket.write(
          `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${ANSWER.length}\r\nConnection: keep-alive\r\n\r\n${ANSWER}`,
        );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => {
    for (const socket of connections) socket.destroy();
    server.close();
  });
  const { port } = server.address() as { port: number };
  return { url: new URL(`http://127.0.0.1:${port}`), connections };
}

const access = (url: URL) => ({ url, headers: {}, timeoutMs: 30_000, maxBytes: 1 << 20 });

describe('the store client', () => {
  it('sends a request again on a new connection when a kept-alive one is reset before the answer', async () => {
    const store = await storeThatResetsIdleConnections();
    const client = storeClient(access(store.url));
    expect((await client.query('up', 0)).kind).toBe('ok');
    // The same connection is reused for the second question, and reset: answered on a second connection.
    expect((await client.query('up', 0)).kind).toBe('ok');
    expect(store.connections.length).toBe(2);
  });

  it('a reset on a new connection is the store unreachable, said once, not sent again', async () => {
    const store = await storeThatResetsIdleConnections(true);
    const outcome = await storeClient(access(store.url)).query('up', 0);
    expect(outcome).toMatchObject({ kind: 'unreachable', reason: expect.stringContaining('ECONNRESET') });
    expect(store.connections.length).toBe(1);
  });
});
