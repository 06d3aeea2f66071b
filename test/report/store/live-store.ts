import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { startNodeExporter } from '../../support/node-exporter.js';
import { type Prometheus, startPrometheus } from '../../support/prometheus.js';
import { CLI, cliEnv } from '../../support/helpers.js';

// A live store for the store door's tests: `collect ARGS --interval 1s` publishing into DIR/textfile,
// the real node_exporter serving that directory, and a real Prometheus scraping it every second with
// the label `host` set to `host`. All three are stopped when the test finishes.

export interface LiveStore {
  prometheus: Prometheus;
  /** The scrape's target, host:port: the `instance` label of every series. */
  target: string;
  /** What the collector printed on stderr so far, for an assertion's message. */
  collectorLog: () => string;
}

export async function startLiveStore(
  dir: string,
  collect: { args: string[]; env?: Record<string, string> },
  store: { host: string; ruleFiles?: string[] },
): Promise<LiveStore> {
  const textfiles = join(dir, 'textfile');
  await mkdir(textfiles, { recursive: true });
  const collector = spawn(
    process.execPath,
    [CLI, 'collect', ...collect.args, '--interval', '1s', '--textfile-dir', textfiles, '--state-dir', join(dir, 'state')],
    { env: cliEnv(collect.env ?? {}), stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  collector.stderr.on('data', (chunk) => (log += chunk));
  const exited = new Promise<void>((resolve) => collector.once('exit', () => resolve()));
  onTestFinished(async () => {
    if (collector.exitCode === null) collector.kill('SIGTERM');
    await exited;
  });
  const exporter = await startNodeExporter(textfiles);
  onTestFinished(() => exporter.stop());
  const target = new URL(exporter.url).host;
  const prometheus = await startPrometheus(dir, {
    global: { scrape_interval: '1s', evaluation_interval: '1s' },
    ...(store.ruleFiles ? { rule_files: store.ruleFiles } : {}),
    scrape_configs: [{ job_name: 'gpu', static_configs: [{ targets: [target], labels: { host: store.host } }] }],
  });
  onTestFinished(() => prometheus.stop());
  return { prometheus, target, collectorLog: () => log };
}
