import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from './node-exporter.js';

export const PROMETHEUS = process.env.PROMETHEUS ?? 'prometheus';

/** A real Prometheus on 127.0.0.1: its port, what it logged so far, and how to stop it. */
export interface Prometheus {
  port: number;
  log: () => string;
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
  return {
    port,
    log: () => log,
    stop: async () => {
      if (prometheus.exitCode === null && prometheus.signalCode === null) prometheus.kill('SIGTERM');
      await exited;
    },
  };
}
