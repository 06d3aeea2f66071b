import { spawn } from 'node:child_process';
import { freePort } from './node-exporter.js';
import { type PromSample, untilReady } from './prometheus.js';

export const VICTORIA_METRICS = process.env.VICTORIA_METRICS ?? 'victoria-metrics';

/** A real single-node VictoriaMetrics on 127.0.0.1: its port, log, import and query API, and how to stop it. */
export interface VictoriaMetrics {
  port: number;
  log: () => string;
  /** POST /api/v1/import/prometheus (the Prometheus text format, timestamps in milliseconds); throws unless it answers 204. */
  importPrometheus: (text: string) => Promise<void>;
  /** Makes what was imported searchable now (/internal/force_flush), instead of within a second or so. */
  flush: () => Promise<void>;
  /** An instant query (at `time`, seconds): the series of a vector. */
  query: (expr: string, time?: number) => Promise<PromSample[]>;
  stop: () => Promise<void>;
}

/**
 * Starts VictoriaMetrics with its storage in `dir` and resolves once /health answers. Retention is
 * a century: the default month would drop backfilled samples older than that on import.
 */
export async function startVictoriaMetrics(dir: string, deadlineMs = 120_000): Promise<VictoriaMetrics> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let log = '';
  const child = spawn(
    VICTORIA_METRICS,
    [`-storageDataPath=${dir}`, `-httpListenAddr=127.0.0.1:${port}`, '-retentionPeriod=100y', '-loggerLevel=WARN', '-search.disableCache'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (chunk) => (log += chunk));
  child.stderr.on('data', (chunk) => (log += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await untilReady(`${base}/health`, () => child.exitCode !== null || child.signalCode !== null, deadlineMs);
  } catch (error) {
    await stop();
    throw new Error(`victoria-metrics: ${(error as Error).message}\n${log}`);
  }
  const expect = async (response: Response, what: string, status: number) => {
    if (response.status !== status) throw new Error(`${what}: HTTP ${response.status}: ${await response.text()}\n${log}`);
  };
  return {
    port,
    log: () => log,
    importPrometheus: async (text) =>
      expect(await fetch(`${base}/api/v1/import/prometheus`, { method: 'POST', body: text }), 'import', 204),
    flush: async () => expect(await fetch(`${base}/internal/force_flush`), 'force_flush', 200),
    query: async (expr, time) => {
      const at = time === undefined ? '' : `&time=${time}`;
      const response = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(expr)}${at}`);
      const body = (await response.json()) as { status: string; error?: string; data?: { resultType: string; result: PromSample[] } };
      if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
      return body.data?.resultType === 'vector' ? body.data.result : [];
    },
    stop,
  };
}
