import type { CollectIo, CollectPlan } from '../collect/plan.js';
import { runOneShot } from '../collect/one-shot.js';
import { parseDuration } from './duration.js';
import { LABEL_NAME } from '../exposition/escape.js';
import { FIELDS } from '../fields/fields.js';
import { selectFields } from '../fields/field-select.js';
import { hostAt } from '../host/host.js';
import { DEMO_LABEL, ownLabelNames } from '../metrics/metrics-catalog.js';
import { DEMO_HOST_NAMES, SOURCE_NAMES } from '../sources/sources.js';
import { taskNameProblem } from './task-name.js';
import { compatFileName, parseCompat } from '../compat/compat-file.js';
import { join } from 'node:path';
import { missingTextfileDir } from '../publish/textfile.js';
import { defaultTextfileDir, type COLLECT_OPTIONS } from './options.js';
import type { ArgsOf } from './option-types.js';
import type { HeadStart } from '../sources/sources.js';

export type CollectArgs = ArgsOf<typeof COLLECT_OPTIONS>;

/** The options -> one complete plan, or the one line that says what is wrong with them (exit 2). */
export function parseCollectArgs(args: CollectArgs): CollectPlan | string {
  const timeoutMs = parseDuration(args.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) return `--timeout: "${args.timeout}" is not a duration (use 10, 10s or 500ms)`;
  const intervalMs = args.interval === undefined ? undefined : parseDuration(args.interval);
  if (args.interval !== undefined && (intervalMs === undefined || intervalMs < 100))
    return `--interval: "${args.interval}" must be a duration of at least 100ms`;
  const processesIntervalMs = parseDuration(args.processesInterval);
  if (processesIntervalMs === undefined || processesIntervalMs < 1000)
    return `--processes-interval: "${args.processesInterval}" must be a duration of at least 1s`;
  if (!args.fileName.endsWith('.prom') || args.fileName.includes('/'))
    return `--file-name: "${args.fileName}" must be a plain name ending in .prom (node_exporter reads only those)`;
  if (args.maxProcesses !== undefined && !(Number.isInteger(args.maxProcesses) && args.maxProcesses >= 0))
    return '--max-processes must be a whole number';
  const taskProblem = taskNameProblem(args.task);
  if (taskProblem) return taskProblem;
  const source = parseSourceArgs(args);
  if (typeof source === 'string') return source;
  const labels = parseLabels(args.label);
  if (typeof labels === 'string') return labels;
  const compat = parseCompat(args.compat, labels);
  if (typeof compat === 'string') return compat;
  return {
    ...source,
    nvidiaSmi: args.nvidiaSmi,
    timeoutMs,
    host: hostAt(args.hostRoot),
    fields: selectFields(FIELDS, args.excludeFields, args.slowFields),
    processes: args.processes,
    maxProcesses: args.maxProcesses,
    textfileDir: args.textfileDir ?? defaultTextfileDir(),
    fileName: args.fileName,
    dryRun: args.dryRun,
    // Every series of the demo says so: a dashboard or alert can never take it for a real host.
    labels: args.source === 'demo' ? [DEMO_LABEL, ...labels] : labels,
    compat,
    stateDir: args.stateDir,
    csv: args.csvDir ? { dir: args.csvDir, task: args.task } : undefined,
    intervalMs,
    processesIntervalMs,
  };
}

/** Which source, and its own options: collect's and run's. */
export type SourceChoice = Pick<CollectPlan, 'source' | 'demoHost' | 'nvmlLibrary' | 'gpmWindowMs'>;

/** --source and the options that go with it -> the plan's part, or the one line that says what is wrong (exit 2). */
export function parseSourceArgs(args: Pick<CollectArgs, 'source' | 'demoHost' | 'nvmlLibrary' | 'gpmWindow'>): SourceChoice | string {
  const gpmWindowMs = parseDuration(args.gpmWindow);
  if (gpmWindowMs === undefined || gpmWindowMs < 10 || gpmWindowMs > 5000)
    return `--gpm-window: "${args.gpmWindow}" must be a duration from 10ms to 5s`;
  const source = SOURCE_NAMES.find((name) => name === args.source);
  if (!source) return `--source: "${args.source}" is not one of ${SOURCE_NAMES.join(', ')}`;
  if (args.nvmlLibrary === '' || args.nvmlLibrary.includes('\0'))
    return `--nvml-library: "${args.nvmlLibrary}" is not a library name or path`;
  const demoHost = DEMO_HOST_NAMES.find((name) => name === args.demoHost);
  if (!demoHost) return `--demo-host: "${args.demoHost}" is not one of ${DEMO_HOST_NAMES.join(', ')}`;
  return { source, demoHost, nvmlLibrary: args.nvmlLibrary, gpmWindowMs };
}

/** --label key=value pairs, each a valid name that no series of ours carries already. */
export function parseLabels(pairs: readonly string[]): [string, string][] | string {
  // Labels our series carry already, from the tables the metric builders use: a --label of the same
  // name would make a series with that label twice, which node_exporter rejects.
  const reserved = pairs.length > 0 ? ownLabelNames() : new Set<string>();
  const labels: [string, string][] = [];
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    const key = pair.slice(0, at);
    if (at < 1 || !LABEL_NAME.test(key) || key.startsWith('__')) return `--label: "${pair}" is not key=value with a valid label name`;
    if (reserved.has(key)) return `--label: "${key}" is a label gpu-textfile sets itself`;
    if (labels.some(([k]) => k === key)) return `--label: "${key}" given twice`;
    labels.push([key, pair.slice(at + 1)]);
  }
  return labels;
}

const SOURCE_WORDS: Record<CollectPlan['source'], string> = {
  'nvidia-smi': 'from nvidia-smi',
  nvml: 'through NVML',
  demo: 'from the demo recordings (not this host)',
};

/** "collecting every 1 s from nvidia-smi into /var/lib/…/nvidia_gpu.prom and /csv/train.csv; Ctrl-C stops it" */
export function daemonBanner(plan: CollectPlan & { intervalMs: number }): string {
  const every = plan.intervalMs % 1000 === 0 ? `${plan.intervalMs / 1000} s` : `${plan.intervalMs} ms`;
  const files = [
    join(plan.textfileDir, plan.fileName),
    ...(plan.compat ?? []).map((name) => join(plan.textfileDir, compatFileName(plan.fileName, name))),
    ...(plan.csv ? [join(plan.csv.dir, `${plan.csv.task}.csv`)] : []),
  ];
  const into = plan.dryRun ? 'printing each sample to stdout' : `into ${files.join(', ')}`;
  return `collecting every ${every} ${SOURCE_WORDS[plan.source]}, ${into}; Ctrl-C stops it`;
}

/**
 * The process's own streams, looked up when written to: Node.js makes each on first use, and the
 * timer's collect, which prints nothing, then never makes them (src/launch/start.ts).
 */
const PROCESS_STREAMS = {
  get out(): NodeJS.WritableStream {
    return process.stdout;
  },
  get err(): NodeJS.WritableStream {
    return process.stderr;
  },
};

/**
 * `gpu-textfile collect`: once, or in daemon mode with --interval. Returns the exit status.
 * `headStart`: the one-shot's nvidia-smi calls, begun by the launcher from the last run's record.
 */
export async function runCollect(
  args: CollectArgs,
  io: { out: NodeJS.WritableStream; err: NodeJS.WritableStream } = PROCESS_STREAMS,
  headStart?: HeadStart,
): Promise<number> {
  const collectIo: CollectIo = { out: { write: (text) => io.out.write(text) }, say: (line) => io.err.write(`gpu-textfile: ${line}\n`) };
  const parsed = parseCollectArgs(args);
  // Before anything runs (no nvidia-smi, no state, no CSV): --dry-run writes nothing, so needs none.
  const plan = typeof parsed === 'string' || parsed.dryRun ? parsed : (missingTextfileDir(parsed.textfileDir) ?? parsed);
  if (typeof plan === 'string') {
    collectIo.say(plan);
    return 2;
  }
  if (plan.intervalMs === undefined) return runOneShot(plan, collectIo, undefined, headStart);
  // The daemon starts its own (an -lms child): calls begun for a one-shot have no taker here.
  headStart?.drop();
  // A command that runs until stopped and prints nothing looks hung: on a terminal it says once what
  // it does and how it ends. Under systemd or a pipe it says nothing (the journal is not for this).
  if ((io.err as { isTTY?: boolean }).isTTY === true) collectIo.say(daemonBanner({ ...plan, intervalMs: plan.intervalMs }));
  const { runDaemon } = await import('../collect/daemon.js');
  return runDaemon({ ...plan, intervalMs: plan.intervalMs }, collectIo);
}
