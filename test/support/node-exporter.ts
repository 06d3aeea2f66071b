import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A real node_exporter on 127.0.0.1 reading one textfile directory. */
export interface NodeExporter {
  url: string;
  scrape: () => Promise<string>;
  log: () => string;
  stop: () => Promise<void>;
}

/** A free port on 127.0.0.1 (closed again: the server given it binds it next). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

export const NODE_EXPORTER = process.env.NODE_EXPORTER ?? 'prometheus-node-exporter';

/** Starts node_exporter with only the textfile collector; resolves once /metrics answers. */
export async function startNodeExporter(textfileDir: string): Promise<NodeExporter> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/metrics`;
  let output = '';
  const child: ChildProcess = spawn(
    NODE_EXPORTER,
    [
      '--collector.disable-defaults',
      '--collector.textfile',
      `--collector.textfile.directory=${textfileDir}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  // Until it answers or exits, up to a minute: a busy machine can take seconds to start it.
  for (const end = Date.now() + 60_000; Date.now() < end; ) {
    if (child.exitCode !== null) break;
    const ok = await fetch(url).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { url, scrape: () => fetch(url).then((r) => r.text()), log: () => output, stop };
    await sleep(50);
  }
  await stop();
  throw new Error(`node_exporter did not answer on ${url} within 60 s:\n${output}`);
}
