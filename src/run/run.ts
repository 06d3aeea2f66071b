import { basename } from 'node:path';
import { type Collection, failedCollection } from '../collection.js';
import { writeNamedOutput } from '../publish/named-output.js';
import { describeFileError, isFileError } from '../files/safe-fs.js';
import { addStep, newTotals } from './accumulate.js';
import { formatSummary, summaryJson } from './format.js';
import type { JobIdentity } from './job-info.js';
import { startJob } from './job.js';
import { readMark } from './marks.js';
import { ignoreRealtimeSignals } from './realtime-signals.js';
import type { RunIo, RunPlan } from './plan.js';
import { readCollections } from './read-loop.js';
import { readerRequest, startReader } from './reader.js';
import { lockTextfile } from './textfile-lock.js';
import { newSamplerState, takeCollection } from './sampler.js';
import { summarize } from './summary.js';

/** The status of a job that could not be started, as a shell's for a command it cannot run. */
export const NOT_STARTED_STATUS = 127;

/**
 * `gpu-textfile run -- CMD`: starts the job, samples its GPUs with the daemon mode's reader until it
 * exits, then prints the summary. Returns the job's exit status (127 when it could not start). The
 * job is never stopped or slowed by us: sampling problems are reported once each, on stderr.
 */
export async function runJob(asked: RunPlan, io: RunIo): Promise<number> {
  const said = new Set<string>();
  // Our lines share stderr with the job's: one after a job's line that has no newline yet starts a new line.
  let midLine = false;
  const newLine = () => (midLine ? '\n' : '');
  const say = (line: string) => {
    if (said.has(line)) return;
    said.add(line);
    io.stderr.write(`${newLine()}gpu-textfile run: ${line}\n`);
    midLine = false;
  };
  // The textfile is ours alone while the job runs (the lock collect takes for it). Held by another
  // writer, or not to be made, it is left alone: the job runs all the same, as with any sampling problem.
  const locked = asked.textfileDir ? await lockTextfile(asked.textfileDir, asked.fileName) : undefined;
  if (typeof locked === 'string') say(`${locked}; the job runs without a textfile`);
  const lock = typeof locked === 'string' ? undefined : locked;
  const plan: RunPlan =
    lock || !asked.textfileDir ? asked : { ...asked, textfileDir: undefined, collect: { ...asked.collect, textfileDir: '' } };
  const totals = newTotals();
  const sampler = newSamplerState(totals, plan.env.CUDA_VISIBLE_DEVICES);
  const job = await startJob(plan.command, plan.env, {
    stdout: io.stdout,
    stderr: io.stderr,
    onOutputFailed: (stream, error) =>
      say(`cannot write to ${stream}: ${error.code ?? error.message}; the job's further output there is dropped`),
    onStderrCopied: (chunk) => {
      if (chunk.length > 0) midLine = chunk[chunk.length - 1] !== 0x0a;
    },
    onLine: (line) => {
      const mark = readMark(line, plan.mark);
      if (!mark) return;
      sampler.lastMark = mark;
      if (mark.step !== undefined) addStep(totals, { time: Date.now(), step: mark.step });
    },
  });
  if (job.kind === 'not-started') {
    await lock?.release();
    io.stderr.write(`gpu-textfile run: ${job.message}\n`);
    return NOT_STARTED_STATUS;
  }
  // Only now: ignored before the spawn, they would be ignored by the job too (realtime-signals.ts).
  // Where they cannot be (no koffi for this machine), one sent to run alone still ends it.
  ignoreRealtimeSignals();
  const identity: JobIdentity = {
    task: plan.task,
    pid: job.pid,
    command: basename(plan.command[0]!),
    startedAtSeconds: Math.floor(plan.startedAt / 1000),
  };
  const stop = new AbortController();
  // Whatever sampling does, the job's output, status and summary come first: a sampling that throws
  // (a bug of ours) is said once, and run goes on; left unhandled, it would end run under its job.
  const sampling = sample(plan, identity, sampler, stop.signal, say).catch((error: unknown) => {
    if (!(error instanceof Error)) throw error;
    say(`sampling stopped: internal_error: ${error.message} (a bug: please report it); the job runs on`);
  });
  const exit = await job.ended;
  const endedAt = Date.now();
  stop.abort();
  await sampling;
  if (plan.textfileDir) {
    const { removeTextfile } = await import('../publish/publish.js');
    const error = removeTextfile(plan.textfileDir, plan.fileName);
    if (error) say(`${error}: the file still shows the job as running`);
    await lock?.release();
  }
  const chosen = sampler.chosen();
  const summary = summarize(totals, {
    task: plan.task,
    command: plan.command,
    startedAt: plan.startedAt,
    endedAt,
    exit,
    selection: chosen.selection,
    gpus: chosen.gpus.map((gpu) => gpu.gpu),
    notes: chosen.notes,
  });
  io.stderr.write(newLine() + formatSummary(summary));
  if (plan.summaryJson) {
    const error = writeSummaryJson(plan.summaryJson, `${JSON.stringify(summaryJson(summary), null, 2)}\n`);
    if (error) say(error);
  }
  job.releaseSignals();
  return exit.status;
}

/**
 * Samples the job's GPUs until `signal`: the daemon mode's loop, each collection taken by the sampler.
 * NVML's calls block the thread that makes them, so with NVML the loop runs in a reader process of
 * its own (src/run/reader.ts): a hung call stops the sampling (its failure is published), never the
 * job's output, its signals or its exit status. The reader may die any time: what was read counts.
 */
async function sample(
  plan: RunPlan,
  job: JobIdentity,
  sampler: ReturnType<typeof newSamplerState>,
  signal: AbortSignal,
  say: (line: string) => void,
) {
  // One collection at a time, in order: each adds to the totals and appends to the trail.
  let taking = Promise.resolve();
  const take = (collection: Collection) => {
    taking = taking
      .then(async () => {
        for (const problem of await takeCollection(collection, sampler, { plan, job, host: plan.collect.host, now: Date.now() }))
          say(problem);
      })
      // A collection taken in a message handler: a throw here would end run under its job.
      .catch((error: unknown) => {
        if (!(error instanceof Error)) throw error;
        say(`a sample was lost: internal_error: ${error.message} (a bug: please report it)`);
      });
    return taking;
  };
  if (plan.collect.source !== 'nvml') {
    await readCollections(plan.collect, plan.intervalMs, { onCollection: take, say, signal });
    return taking;
  }
  let finalDone = () => {};
  const reader = startReader(
    readerRequest('collections', plan.collect, plan.intervalMs),
    (message) => {
      if (message.kind === 'collection') void take(message.collection);
      else if (message.kind === 'say') say(message.line);
      else if (message.kind === 'final-done') finalDone();
    },
    true,
  );
  // The job ended: one more read (the energy counter to the job's end), bounded by the reader's
  // watchdog (a hung read kills the reader, which ends this wait too); then the reader is stopped.
  signal.addEventListener('abort', () => {
    const done = new Promise<void>((resolve) => {
      finalDone = resolve;
    });
    reader.ask({ kind: 'final' });
    void Promise.race([done, reader.ended]).then(() => reader.stop());
  });
  const failure = await reader.ended;
  if (failure) {
    // After the job ended only the read at its end was left: the job no longer "runs on".
    if (signal.aborted)
      say(`the read at the job's end failed: ${failure.reason}: ${failure.message}; the summary covers what was read before`);
    else say(`sampling stopped: ${failure.reason}: ${failure.message}; the job runs on, and its summary covers what was read`);
    await take(failedCollection(failure, 0));
  }
  return taking;
}

/** Writes --summary-json, a path the user names (src/publish/named-output.ts). Returns the one line that says why not. */
function writeSummaryJson(path: string, text: string): string | undefined {
  try {
    writeNamedOutput(path, text);
    return undefined;
  } catch (error) {
    if (!isFileError(error)) throw error;
    return `--summary-json: cannot write ${path}: ${describeFileError(error)}`;
  }
}
