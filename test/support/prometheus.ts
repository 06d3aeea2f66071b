import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from './node-exporter.js';

export const PROMETHEUS = process.env.PROMETHEUS ?? 'prometheus';

/** One series of an instant query's answer. */
export type PromSample = { metric: Record<string, string>; value: [number, string] };

/** A real Prometheus on 127.0.0.1: its port, what it logged so far, its HTTP API, and how to stop it. */
export interface Prometheus {
  port: number;
  log: () => string;
  /** GET /api/v1/PATH: the answer's data; throws with Prometheus's error when it did not succeed. */
  api: (path: string) => Promise<unknown>;
  /** An instant query (at `time`, seconds, if given): the series of a vector, none for any other result. */
  query: (expr: string, time?: number) => Promise<PromSample[]>;
  stop: () => Promise<void>;
}

/** Starts Prometheus with `config` (written as JSON, which is YAML) and its storage in `dir`. */
export async function startPrometheus(dir: string, config: object): Promise<Prometheus> {
  await writeFile(join(dir, 'prometheus.yml'), JSON.stringify(config));
  const port = await freePort();
  let log = '';
  const prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  prometheus.stdout.on('data', (chunk) => (log += chunk));
  prometheus.stderr.on('data', (chunk) => (log += chunk));
  const exited = new Promise<void>((resolve) => prometheus.once('exit', () => resolve()));
  const api = async (path: string) => {
    const body = (await (await fetch(`http://127.0.0.1:${port}/api/v1/${path}`)).json()) as {
      status: string;
      error?: string;
      data?: unknown;
    };
    if (body.status !== 'success') throw new Error(`${path}: ${body.error}`);
    return body.data;
  };
  return {
    port,
    log: () => log,
    api,
    query: async (expr, time) => {
      const at = time === undefined ? '' : `&time=${time}`;
      const data = (await api(`query?query=${encodeURIComponent(expr)}${at}`)) as { resultType: string; result: PromSample[] };
      return data.resultType === 'vector' ? data.result : [];
    },
    stop: async () => {
      if (prometheus.exitCode === null && prometheus.signalCode === null) prometheus.kill('SIGTERM');
      await exited;
    },
  };
}
