import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { classifyPulse } from '../pulse/classify.js';
import { formatPulse, pulseJson } from '../pulse/format.js';
import { parseSeries, type SeriesSample } from '../sources/nvidia-smi/series-csv.js';
import { type Failure, isSample } from '../collection.js';
import type { CollectPlan } from '../collect/plan.js';
import { FIELDS } from '../fields/fields.js';
import { hostAt } from '../host/host.js';
import { runSample } from '../run/samples.js';
import { readerRequest, startReader } from '../run/reader.js';
import { demoDir } from '../sources/sources.js';
import { parseDuration } from './duration.js';
import { classifyFailure } from '../sources/nvidia-smi/failure.js';
import { parseHelpQueryGpu } from '../sources/nvidia-smi/help-query-gpu.js';
import { runSmi, streamSmi } from '../sources/nvidia-smi/run.js';
import { DEMO_FILES, readRecording } from '../sources/demo/recordings.js';
import { pulseTimingProblem } from './arg-checks.js';
import type { ArgsOf } from './option-types.js';
import type { PULSE_OPTIONS } from './options.js';

export type PulseArgs = ArgsOf<typeof PULSE_OPTIONS>;

/** The columns pulse asks for, each by the first name this driver knows. */
const WANTED = [
  ['timestamp'],
  ['index'],
  ['utilization.gpu'],
  ['power.draw'],
  ['power.max_limit', 'power.limit'],
  ['clocks.current.sm', 'clocks.sm'],
  ['clocks.max.sm'],
  ['clocks_event_reasons.active', 'clocks_throttle_reasons.active'],
];

/** Records `seconds` of one GPU with a single `nvidia-smi … -lms N`; returns the CSV text or why not. */
async function record(args: PulseArgs, intervalMs: number, say: (line: string) => void): Promise<string | { error: string }> {
  const help = await runSmi(args.nvidiaSmi, ['--help-query-gpu'], { timeoutMs: 10_000 });
  if (help.kind !== 'ok') return { error: withoutGpu(classifyFailure(help, 'nvidia-smi --help-query-gpu')) };
  const known = parseHelpQueryGpu(help.stdout);
  const columns = WANTED.flatMap((names) => names.filter((n) => known.has(n)).slice(0, 1));
  say(`sampling GPU ${args.gpu} every ${intervalMs} ms for ${args.seconds} s…`);
  const child = streamSmi(args.nvidiaSmi, [`--query-gpu=${columns.join(',')}`, '--format=csv', '-i', args.gpu, '-lms', String(intervalMs)]);
  const lines: string[] = [];
  const reading = (async () => {
    for await (const line of child.lines) lines.push(line);
  })();
  // The wait ends with the child too: one that exits at once (no such GPU) ends pulse at once, not
  // after --seconds.
  const waited = new AbortController();
  await Promise.race([sleep(args.seconds * 1000, undefined, { signal: waited.signal }).catch(() => undefined), child.ended]);
  waited.abort();
  child.stop();
  const outcome = await child.ended;
  await reading;
  if (lines.length < 2 && outcome.kind !== 'ok' && !(outcome.kind === 'killed'))
    return { error: withoutGpu(classifyFailure(outcome, 'nvidia-smi -lms')) };
  return lines.join('\n');
}

/**
 * The fields pulse reads through NVML: its nvidia-smi columns (the event reasons one field each
 * there), and GPM's SM and tensor activity.
 */
const nvmlFields = () =>
  FIELDS.filter(
    (field) =>
      WANTED.some((names) => names.includes(field.query)) ||
      field.query.startsWith('clocks_event_reasons.') ||
      field.query === 'nvml.gpm.sm_active' ||
      field.query === 'nvml.gpm.tensor_active',
  );

/** The signals that end pulse, and its NVML reader with it. */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * --source nvml: `seconds` of one GPU (by index or UUID) through NVML, the daemon mode's reader at
 * `intervalMs`, in a reader process of its own (src/run/reader.ts) under collect's watchdog: a call
 * that hangs past --timeout ends the recording with its one line, and Ctrl-C works meanwhile.
 * GPM's activity, where the GPU has it, keeps copy-bound work from being called saturated.
 */
async function recordNvml(
  args: PulseArgs,
  timing: { intervalMs: number; timeoutMs: number },
  say: (line: string) => void,
): Promise<SeriesSample[] | { error: string }> {
  const plan: CollectPlan = {
    source: 'nvml',
    demoHost: 'h200',
    nvmlLibrary: args.nvmlLibrary,
    gpmWindowMs: 100,
    nvidiaSmi: args.nvidiaSmi,
    timeoutMs: timing.timeoutMs,
    host: hostAt('/'),
    fields: nvmlFields(),
    processes: false,
    // Nothing is published: the reader only reads.
    textfileDir: '',
    fileName: '',
    dryRun: true,
    labels: [],
    stateDir: '',
    processesIntervalMs: 0,
  };
  say(`sampling GPU ${args.gpu} through NVML every ${timing.intervalMs} ms for ${args.seconds} s…`);
  const samples: SeriesSample[] = [];
  let failed: Failure | undefined;
  let lastRowAt: number | undefined;
  let firstRow = () => {};
  const started = new Promise<void>((done) => {
    firstRow = done;
  });
  // Run in the same process group: a Ctrl-C ends the reader with pulse.
  const reader = startReader(
    readerRequest('rows', plan, timing.intervalMs),
    (message) => {
      if (message.kind === 'ended') failed = message.failure;
      if (message.kind !== 'row') return;
      lastRowAt = Date.now();
      firstRow();
      if (!isSample(message.row)) return;
      const row = message.row;
      if (row.gpu !== args.gpu && row.uuid !== args.gpu) return;
      const sample = runSample(row, Date.now());
      if (sample) samples.push(sample);
    },
    false,
  );
  // Ctrl-C or a kill of pulse alone: the reader, perhaps stuck in a driver call, ends first; then
  // pulse ends by the same signal, as it would have without this handler.
  const onSignal = (signal: NodeJS.Signals) => {
    reader.stop();
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
    process.kill(process.pid, signal);
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  // The watchdog fires within its deadline (the timeout and GPM's window) and a quarter of it.
  const watchdogMs = (timing.timeoutMs + plan.gpmWindowMs) * 1.25 + WATCHDOG_SLACK_MS;
  // --seconds of sampling, counted from the first row: the reader's start (a process, the library
  // loaded, NVML initialised) takes seconds on a busy machine, and is no sampling. Its start is
  // bounded by the watchdog (a hung nvmlInit) and the slack.
  const ended = await within(
    Promise.race([started.then(() => within(reader.ended, args.seconds * 1000)), reader.ended]),
    watchdogMs + args.seconds * 1000,
  );
  // No row for a while when the time is up: a call may hang. Its watchdog says so within its deadline:
  // waited for, it is said, rather than "only N samples".
  const stalled = lastRowAt === undefined || Date.now() - lastRowAt > 2 * timing.intervalMs + plan.gpmWindowMs + STALL_SLACK_MS;
  const hung = ended === undefined && stalled ? await within(reader.ended, watchdogMs) : ended;
  for (const s of STOP_SIGNALS) process.off(s, onSignal);
  reader.stop();
  failed ??= hung;
  if (failed && samples.length < 5) return { error: `${failed.reason}: ${failed.message}` };
  if (failed) say(`${failed.reason}: ${failed.message}; the verdict covers the ${samples.length} samples read before`);
  return samples;
}

/** How much later than its deadline a watchdog may be heard from (a busy machine: the reader's exit, the pipe). */
const WATCHDOG_SLACK_MS = 5000;
/** A row later than two intervals by this much: the read may hang. */
const STALL_SLACK_MS = 250;

/** What `promise` resolves to, or undefined after `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((done) => {
    timer = setTimeout(() => done(undefined), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * --source demo: a real H200 recording (bursts of work between waits) in real time: `seconds` pass,
 * then the rows recorded in that many seconds (at least 5) stand for what was sampled.
 */
async function replayDemo(args: PulseArgs, say: (line: string) => void): Promise<string> {
  say(`replaying a recorded H200 (demo, not this host) for ${args.seconds} s…`);
  await sleep(args.seconds * 1000);
  const [header = '', ...rows] = readRecording(demoDir(), DEMO_FILES.pulse)
    .split('\n')
    .filter((line) => line !== '');
  return [header, ...rows.slice(0, Math.max(5, Math.round((args.seconds * 1000) / 200)))].join('\n');
}

/** Why there is no verdict: no samples of the GPU asked for (and which the data has), or too few. */
function tooFewSamples(count: number, gpu: string, gpus: readonly string[]): string {
  if (count > 0) return `only ${count} samples of GPU ${gpu}; need at least 5 (a longer --seconds?)`;
  if (gpus.length === 0) return `no samples in the data; need at least 5`;
  return `no samples of GPU ${gpu}: the data has GPU${gpus.length > 1 ? 's' : ''} ${gpus.join(', ')} only (--gpu names one)`;
}

/** On a host where nvidia-smi cannot be found: where to look, and how to see pulse at work without a GPU. */
const withoutGpu = (failure: { reason: string; message: string }): string =>
  failure.reason === 'nvidia_smi_not_found'
    ? `${failure.message} (try: gpu-textfile doctor; to see pulse without a GPU: gpu-textfile pulse --source demo)`
    : failure.message;

/** `gpu-textfile pulse`: a short, fast look at one GPU that tells a data-starved job from a throttled or saturated one. */
export async function runPulse(args: PulseArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  const intervalMs = parseDuration(args.interval);
  // The range pulse's thresholds were worked out on (docs/pulse.md): under 100 ms nvidia-smi's own
  // counters repeat, over 500 ms a job busy 30 % of each half second reads 0 %.
  if (intervalMs === undefined || intervalMs < 100 || intervalMs > 500) {
    say(`--interval: "${args.interval}" must be a duration from 100ms to 500ms`);
    return 2;
  }
  const timing = pulseTimingProblem(args);
  if (typeof timing === 'string') {
    say(timing);
    return 2;
  }
  if (args.source !== 'nvidia-smi' && args.source !== 'nvml' && args.source !== 'demo') {
    say(`--source: "${args.source}" is not nvidia-smi, nvml or demo`);
    return 2;
  }
  if (args.nvmlLibrary === '' || args.nvmlLibrary.includes('\0')) {
    say(`--nvml-library: "${args.nvmlLibrary}" is not a library name or path`);
    return 2;
  }
  const text =
    !args.from && args.source === 'nvml'
      ? await recordNvml(args, { intervalMs, timeoutMs: timing.timeoutMs }, say)
      : args.from
        ? await readFile(args.from, 'utf8').catch((error: NodeJS.ErrnoException) => ({ error: `cannot read ${args.from}: ${error.code}` }))
        : args.source === 'demo'
          ? await replayDemo(args, say)
          : await record(args, intervalMs, say);
  if (!Array.isArray(text) && typeof text !== 'string') {
    say(text.error);
    return 1;
  }
  const parsed = Array.isArray(text) ? { samples: text, skipped: 0 } : parseSeries(text);
  if ('error' in parsed) {
    say(parsed.error);
    return 1;
  }
  const gpus = [...new Set(parsed.samples.map((s) => s.gpu))];
  // NVML's samples are of the GPU asked for, by index or UUID, already.
  const gpu = gpus.includes(args.gpu)
    ? args.gpu
    : (Array.isArray(text) || (args.from && args.gpu === '0')) && gpus.length > 0
      ? gpus[0]!
      : args.gpu;
  const samples = parsed.samples.filter((s) => s.gpu === gpu);
  if (samples.length < 5) {
    say(tooFewSamples(samples.length, gpu, gpus));
    return 1;
  }
  const pulse = classifyPulse(samples);
  io.out.write(args.json ? `${JSON.stringify(pulseJson(pulse, parsed.skipped), null, 2)}\n` : formatPulse(pulse));
  return 0;
}
