import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

// A store of the test's own on 127.0.0.1: answers as a handler says, as Prometheus's API would,
// and keeps what each request brought. Stopped when the test finishes.

export type Handler = (path: string, form: URLSearchParams, req: IncomingMessage, res: ServerResponse) => void;

/** What each request brought: its path, form and headers. */
export interface Seen {
  path: string;
  form: URLSearchParams;
  headers: IncomingMessage['headers'];
}

export const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** A store that has one host's series and answers every query with nothing (and `warnings`, if given). */
export const emptyStore =
  (warnings?: string[]): Handler =>
  (path, _form, _req, res) =>
    json(res, 200, {
      status: 'success',
      data: path.endsWith('/series')
        ? [{ __name__: 'nvidia_gpu_up', instance: 'h1', gpu: '0', uuid: 'GPU-1' }]
        : { resultType: 'matrix', result: [] },
      ...(warnings ? { warnings } : {}),
    });

export async function fakeStore(handler: Handler, tls?: { key: string; cert: string }): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const form = new URLSearchParams(body);
      seen.push({ path: req.url ?? '', form, headers: req.headers });
      handler(req.url ?? '', form, req, res);
    });
  };
  const server = tls ? createHttpsServer(tls, listener) : createHttpServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`, seen };
}
