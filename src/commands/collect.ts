import { hostname } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { join } from 'node:path';
import { collect, queryProcesses } from '../collect.js';
import { FIELDS, selectFields } from '../fields.js';
import { LABEL_NAME } from '../exposition/escape.js';
import { smiRunner, streamSmi, type SmiRunner } from '../nvidia-smi/run.js';
import type { PublishTarget } from '../publish/publish.js';
import { removeLeftoverTemps, tryLock } from '../locks/file-lock.js';
import { readState, writeState, type CollectorState } from '../state.js';
import { parseDuration } from '../duration.js';
import { checkDirectories } from '../publish/textfile.js';
import { defaultTextfileDir } from './options.js';
import { ownLabelNames } from '../metrics.js';
import { taskNameProblem } from '../task-name.js';

export interface CollectArgs {
  textfileDir?: string;
  fileName: string;
  dryRun: boolean;
  nvidiaSmi: string;
  timeout: string;
  processes: boolean;
  maxProcesses?: number;
  label: string[];
  excludeFields: string[];
  slowFields: boolean;
  stateDir: string;
  csvDir?: string;
  task: string;
  interval?: string;
  processesInterval: string;
}

/** Parsed, validated options, or the one line that says what is wrong with them. */
export interface CollectSettings {
  labels: [string, string][];
  timeoutMs: number;
  /** Long-running mode when set. */
  intervalMs?: number;
  processesIntervalMs: number;
}

export function parseCollectArgs(args: CollectArgs): CollectSettings | string {
  const timeoutMs = parseDuration(args.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) return `--timeout: "${args.timeout}" is not a duration (use 10, 10s or 500ms)`;
  const intervalMs = args.interval === undefined ? undefined : parseDuration(args.interval);
  if (args.interval !== undefined && (intervalMs === undefined || intervalMs < 100)) return `--interval: "${args.interval}" must be a duration of at least 100ms`;
  const processesIntervalMs = parseDuration(args.processesInterval);
  if (processesIntervalMs === undefined || processesIntervalMs < 1000) return `--processes-interval: "${args.processesInterval}" must be a duration of at least 1s`;
  if (!args.fileName.endsWith('.prom') || args.fileName.includes('/')) return `--file-name: "${args.fileName}" must be a plain name ending in .prom (node_exporter reads only those)`;
  if (args.maxProcesses !== undefined && !(Number.isInteger(args.maxProcesses) && args.maxProcesses >= 0)) return '--max-processes must be a whole number';
  const taskProblem = taskNameProblem(args.task);
  if (taskProblem) return taskProblem;
  // Labels our series carry already, from the tables the metric builders use: a --label of the same
  // name would make a series with that label twice, which node_exporter rejects.
  const reserved = args.label.length > 0 ? ownLabelNames() : new Set<string>();
  const labels: [string, string][] = [];
  for (const pair of args.label) {
    const at = pair.indexOf('=');
    const key = pair.slice(0, at);
    if (at < 1 || !LABEL_NAME.test(key) || key.startsWith('__')) return `--label: "${pair}" is not key=value with a valid label name`;
    if (reserved.has(key)) return `--label: "${key}" is a label gpu-textfile sets itself`;
    if (labels.some(([k]) => k === key)) return `--label: "${key}" given twice`;
    labels.push([key, pair.slice(at + 1)]);
  }
  return { labels, timeoutMs, intervalMs, processesIntervalMs };
}

/** A runner whose calls share one deadline: --timeout bounds the whole collection. */
function deadlineRunner(command: string, timeoutMs: number): SmiRunner {
  const deadline = Date.now() + timeoutMs;
  return (args) => smiRunner(command, { timeoutMs: Math.max(1, deadline - Date.now()) })(args);
}

/** `gpu-textfile collect`: one collection, published. Returns the exit status. */
export async function runCollect(args: CollectArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  const parsed = parseCollectArgs(args);
  if (typeof parsed === 'string') {
    say(parsed);
    return 2;
  }
  const textfileDir = args.textfileDir ?? defaultTextfileDir();
  const target = join(textfileDir, args.fileName);

  let release = async () => {};
  if (!args.dryRun) {
    const unsafe = checkDirectories(textfileDir, args.stateDir);
    if (unsafe) {
      say(unsafe);
      return 1;
    }
    // A lock whose process is gone is taken over at once: the next run must not wait for it.
    const lockPath = join(textfileDir, `.${args.fileName}.lock`);
    const lock = await tryLock(lockPath);
    if (lock.kind === 'busy') {
      say(`another collect (pid ${lock.pid}) is still running for ${target}; not starting a second one`);
      return 75;
    }
    if (lock.kind === 'error') {
      say(`${lock.message}; nothing written`);
      return 1;
    }
    // Under the lock: the temp files of runs killed while taking it are cleared on the way out.
    release = async () => {
      const problem = removeLeftoverTemps(lockPath);
      if (problem) say(problem);
      await lock.release();
    };
  }
  try {
    return await collectAndPublish(args, parsed, textfileDir, target, say, io.out);
  } finally {
    await release();
  }
}

async function collectAndPublish(
  args: CollectArgs,
  { labels, timeoutMs, intervalMs, processesIntervalMs }: CollectSettings,
  textfileDir: string,
  target: string,
  say: (line: string) => void,
  out: NodeJS.WritableStream,
): Promise<number> {
  const state = readState(args.stateDir);
  const publishTarget: PublishTarget = {
    textfileDir,
    fileName: args.fileName,
    dryRun: args.dryRun,
    labels,
    csv: args.csvDir ? { dir: args.csvDir, task: args.task, host: hostname(), knownGpus: () => state.gpus ?? [] } : undefined,
    out,
  };
  const fields = selectFields(FIELDS, args.excludeFields, args.slowFields);
  const userRoots = { proc: '/proc', passwd: '/etc/passwd' };
  const oneShot = async (current: CollectorState, previous: number | undefined) => {
    const output = await collect({
      run: deadlineRunner(args.nvidiaSmi, timeoutMs),
      fields,
      processes: args.processes,
      maxProcesses: args.maxProcesses,
      state: current,
      previousSuccessSeconds: previous,
      userRoots,
      procRoot: '/proc',
      now: Date.now,
    });
    if (!output.collection.health.failure) return output;
    const { withDiagnosis } = await import('../doctor/quick.js');
    return { ...output, collection: await withDiagnosis(output.collection) };
  };
  if (intervalMs !== undefined) {
    return runForever({ args, state, fields, intervalMs, processesIntervalMs, timeoutMs, userRoots, oneShot, publishTarget, say });
  }
  // nvidia-smi is running once collect() returns its promise: the code that renders and writes
  // loads meanwhile instead of before, and the clean-up runs.
  const collecting = oneShot(state, undefined);
  const { publish, previousSuccessSeconds, removeStaleTemps } = await import('../publish/publish.js');
  // Temp files a killed run left behind.
  if (!args.dryRun) removeStaleTemps(textfileDir, args.fileName);
  const collected = await collecting;
  const { health } = collected.collection;
  // A failed run carries the last good run's time over from the file it replaces.
  const result = health.failure
    ? { ...collected, collection: { ...collected.collection, health: { ...health, lastSuccessSeconds: await previousSuccessSeconds(publishTarget) } } }
    : collected;
  const { failure, textfileError, csvError } = await publish(result.collection, publishTarget, new Date());
  const diagnosis = result.collection.health.diagnosis;
  if (textfileError) {
    say(textfileError);
    return 1;
  }
  if (csvError) say(csvError);
  if (!args.dryRun) {
    const stateError = await writeState(args.stateDir, state, result.state);
    if (stateError) say(`${stateError} (each run then also asks nvidia-smi --help-query-gpu; see --state-dir)`);
  }
  for (const warning of result.warnings) say(warning);
  if (failure) {
    const where = args.dryRun ? 'printed' : `wrote ${target}`;
    const hint = diagnosis ? `gpu-textfile doctor says ${diagnosis.verdict}: ${diagnosis.summary}` : 'try: gpu-textfile doctor';
    say(`${failure.reason}: ${failure.message} (${where} with the health block only; ${hint})`);
    return 1;
  }
  return 0;
}

/** The long-running mode: until SIGTERM or SIGINT, then the child is killed and the last write finished. */
async function runForever(context: {
  args: CollectArgs;
  state: CollectorState;
  fields: ReturnType<typeof selectFields>;
  intervalMs: number;
  processesIntervalMs: number;
  timeoutMs: number;
  userRoots: { proc: string; passwd: string };
  oneShot: (state: CollectorState, previous: number | undefined) => ReturnType<typeof collect>;
  publishTarget: PublishTarget;
  say: (line: string) => void;
}): Promise<number> {
  const { args, publishTarget, say } = context;
  // A sample is a millisecond or two of JavaScript per interval. V8's optimizing compiler, TurboFan,
  // kept recompiling it on background threads for minutes, costing as much CPU as the samples
  // themselves (measured: 1.5 ms a sample on top of 1.6); Maglev and the baseline tiers do not.
  setFlagsFromString('--max-opt=2');
  const { runLongRunning } = await import('../long-running.js');
  const { publish, previousSuccessSeconds, removeStaleTemps } = await import('../publish/publish.js');
  if (!args.dryRun) removeStaleTemps(publishTarget.textfileDir, args.fileName);
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  let saved = context.state;
  let textChecked = false;
  try {
    await runLongRunning({
      fields: context.fields,
      intervalMs: context.intervalMs,
      // nvidia-smi's first row may take as long as a one-shot query may.
      startupGraceMs: context.timeoutMs,
      processesIntervalMs: args.processes ? context.processesIntervalMs : undefined,
      oneShot: context.oneShot,
      queryProcesses: () => queryProcesses(deadlineRunner(args.nvidiaSmi, context.timeoutMs), { maxProcesses: args.maxProcesses, userRoots: context.userRoots }),
      stream: (streamArgs) => streamSmi(args.nvidiaSmi, streamArgs),
      publish: async (collection) => {
        const { textfileError, csvError } = await publish(collection, publishTarget, new Date(), !textChecked);
        textChecked = true;
        if (textfileError) say(textfileError);
        if (csvError) say(csvError);
      },
      saveState: async (next) => {
        if (args.dryRun) return;
        const error = await writeState(args.stateDir, saved, next);
        if (!error) saved = next;
      },
      say,
      now: Date.now,
      signal: stop.signal,
      initialState: context.state,
      initialSuccessSeconds: await previousSuccessSeconds(publishTarget),
    });
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  return 0;
}
