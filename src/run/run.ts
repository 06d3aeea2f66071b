import { basename, dirname } from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import { daemonLoop } from '../collect/daemon-loop.js';
import { queryProcesses } from '../collect/collect.js';
import { collectOnce } from '../collect/one-shot.js';
import { openSource } from '../sources/sources.js';
import { describeFileError, isFileError, pinDir } from '../safe-fs.js';
import { readState } from '../state.js';
import { addStep, newTotals } from './accumulate.js';
import { formatSummary, summaryJson } from './format.js';
import type { JobIdentity } from './job-info.js';
import { startJob } from './job.js';
import { readMark } from './marks.js';
import type { RunIo, RunPlan } from './plan.js';
import { newSamplerState, takeCollection } from './sampler.js';
import { summarize } from './summary.js';

/** How often the job's processes are looked for on the GPUs (to find its GPUs when CUDA_VISIBLE_DEVICES is not set). */
const PROCESSES_INTERVAL_MS = 5000;

/** The status of a job that could not be started, as a shell's for a command it cannot run. */
export const NOT_STARTED_STATUS = 127;

/**
 * `gpu-textfile run -- CMD`: starts the job, samples its GPUs with the daemon mode's reader until it
 * exits, then prints the summary. Returns the job's exit status (127 when it could not start). The
 * job is never stopped or slowed by us: sampling problems are reported once each, on stderr.
 */
export async function runJob(plan: RunPlan, io: RunIo): Promise<number> {
  const said = new Set<string>();
  const say = (line: string) => {
    if (said.has(line)) return;
    said.add(line);
    io.stderr.write(`gpu-textfile run: ${line}\n`);
  };
  const totals = newTotals();
  const sampler = newSamplerState(totals, plan.env.CUDA_VISIBLE_DEVICES);
  const job = await startJob(plan.command, plan.env, {
    stdout: io.stdout,
    stderr: io.stderr,
    onLine: (line) => {
      const mark = readMark(line, plan.mark);
      if (!mark) return;
      sampler.lastMark = mark;
      if (mark.step !== undefined) addStep(totals, { time: Date.now(), step: mark.step });
    },
  });
  if (job.kind === 'not-started') {
    io.stderr.write(`gpu-textfile run: ${job.message}\n`);
    return NOT_STARTED_STATUS;
  }
  const identity: JobIdentity = {
    task: plan.task,
    pid: job.pid,
    command: basename(plan.command[0]!),
    startedAtSeconds: Math.floor(plan.startedAt / 1000),
  };
  const stop = new AbortController();
  const sampling = sample(plan, identity, sampler, stop.signal, say);
  const exit = await job.ended;
  const endedAt = Date.now();
  stop.abort();
  await sampling;
  if (plan.textfileDir) {
    const { removeTextfile } = await import('../publish/publish.js');
    const error = removeTextfile(plan.textfileDir, plan.fileName);
    if (error) say(`${error}: the file still shows the job as running`);
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
  io.stderr.write(formatSummary(summary));
  if (plan.summaryJson) {
    const error = writeSummaryJson(plan.summaryJson, `${JSON.stringify(summaryJson(summary), null, 2)}\n`);
    if (error) say(error);
  }
  return exit.status;
}

/** The daemon mode's loop, reading every GPU, each collection handed to the sampler; until `signal`. */
async function sample(
  plan: RunPlan,
  job: JobIdentity,
  sampler: ReturnType<typeof newSamplerState>,
  signal: AbortSignal,
  say: (line: string) => void,
) {
  const collectPlan = plan.collect;
  // The state collect keeps (the driver's field names) spares a --help-query-gpu; run only reads it.
  const state = readState(collectPlan.stateDir);
  // The source is chosen by sources.ts, as collect's is: a new source (NVML) serves run unchanged.
  const source = await openSource(collectPlan.source, collectPlan);
  await daemonLoop({
    fields: collectPlan.fields,
    intervalMs: plan.intervalMs,
    startupGraceMs: collectPlan.timeoutMs,
    processesIntervalMs: collectPlan.processes ? PROCESSES_INTERVAL_MS : undefined,
    oneShot: (current, previous) => collectOnce(collectPlan, current, previous),
    queryProcesses: () => queryProcesses(source.reads(), collectPlan),
    stream: (fields, names) => source.stream(fields, names, plan.intervalMs),
    publish: async (collection) => {
      const now = Date.now();
      for (const problem of await takeCollection(collection, sampler, { plan, job, host: collectPlan.host, now })) say(problem);
    },
    saveState: async () => undefined,
    // The loop's own lines (a reader restarted) are worth one line each; the summary says the rest.
    say,
    now: Date.now,
    signal,
    initialState: state,
  });
}

/**
 * Writes --summary-json, a path the user names: with write-file-atomic (temp file, rename), whole or
 * not at all, an existing file's owner and mode kept. Its directory is created through safe-fs, whose
 * mkdir does not loop on procfs. Returns the one line that says why not.
 */
function writeSummaryJson(path: string, text: string): string | undefined {
  try {
    pinDir(dirname(path), { create: true }).close();
    writeFileAtomic.sync(path, text);
    return undefined;
  } catch (error) {
    if (!isFileError(error)) throw error;
    return `--summary-json: cannot write ${path}: ${describeFileError(error)}`;
  }
}
