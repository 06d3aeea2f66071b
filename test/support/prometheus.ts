import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { freePort } from './node-exporter.js';

export const PROMETHEUS = process.env.PROMETHEUS ?? 'prometheus';
export const PROMTOOL = process.env.PROMTOOL ?? 'promtool';

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
  /** Resolves once /-/ready answers 200 (the blocks on disk loaded); throws with the log if it exits or the deadline passes. */
  ready: (deadlineMs?: number) => Promise<void>;
  stop: () => Promise<void>;
}

/** What else to start it with: flags of its own (a retention long enough for old backfilled blocks). */
export interface PrometheusOptions {
  args?: readonly string[];
}

/**
 * Starts Prometheus with `config` (an object written as JSON, which is YAML; or YAML text, such as an
 * example file) and its storage in `dir`/tsdb (where `backfill` puts blocks). Does not wait: call
 * ready() before the first query.
 */
export async function startPrometheus(dir: string, config: object | string, options: PrometheusOptions = {}): Promise<Prometheus> {
  await writeFile(join(dir, 'prometheus.yml'), typeof config === 'string' ? config : JSON.stringify(config));
  const port = await freePort();
  let log = '';
  const prometheus = spawn(
    PROMETHEUS,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...(options.args ?? []),
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
    ready: (deadlineMs = 120_000) =>
      untilReady(
        `http://127.0.0.1:${port}/-/ready`,
        () => prometheus.exitCode !== null || prometheus.signalCode !== null,
        deadlineMs,
      ).catch((error: Error) => {
        throw new Error(`prometheus: ${error.message}\n${log}`);
      }),
    stop: async () => {
      if (prometheus.exitCode === null && prometheus.signalCode === null) prometheus.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * Polls `url` until it answers 200: a server on a busy machine may take many seconds to load its
 * data. Rejects once `gone()` says the process ended, or after the deadline.
 */
export async function untilReady(url: string, gone: () => boolean, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    if (gone()) throw new Error(`exited before ${url} answered`);
    const status = await fetch(url, { signal: AbortSignal.timeout(5_000) }).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > end) throw new Error(`${url} not ready after ${deadlineMs} ms (last status ${status})`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

/**
 * `promtool tsdb create-blocks-from openmetrics FILE DIR/tsdb`: the blocks a Prometheus started on
 * DIR then loads. Throws with promtool's output when it fails.
 */
export async function backfill(openMetricsFile: string, dir: string, deadlineMs = 300_000): Promise<string> {
  const run = await execa(PROMTOOL, ['tsdb', 'create-blocks-from', 'openmetrics', openMetricsFile, join(dir, 'tsdb')], {
    reject: false,
    timeout: deadlineMs,
    all: true,
  });
  if (run.exitCode !== 0) throw new Error(`promtool exited ${run.exitCode}: ${run.all}`);
  return run.all ?? '';
}
