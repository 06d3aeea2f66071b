import { setFlagsFromString } from 'node:v8';
import { unaskedCompatFiles } from '../compat/compat-file.js';
import type { RowStream } from '../sources/source.js';
import { openSource } from '../sources/sources.js';
import { readState, writeState } from './state.js';
import type { XidEvents, XidPoll } from '../xid/watch.js';
import { ProcessMemory } from '../host/processes.js';
import { ReservationMemory } from '../host/reservations.js';
import { keptXid, knownGpu, queryProcesses } from './collect.js';
import { withCollectLock } from './lock.js';
import { collectOnce, publishTargetOf, stateToKeep, xidWatchFor } from './one-shot.js';
import type { CollectIo, CollectPlan } from './plan.js';

/**
 * How often the daemon mode looks at the kernel log for Xid lines (and takes NVML's Xid events). Each
 * look ends in a read the log refuses with EAGAIN, an exception in Node.js: 76 us of a 250 ms sample
 * on the H200 host, for counters that alerts read over minutes.
 */
export const XID_LOOK_EVERY_MS = 1000;

/**
 * NVML's Xid events carry no time: they are stamped when drained (each sample drains the set), so the
 * time of the last one (nvidia_gpu_exporter's nvidia_smi_xid_last_timestamp_seconds) is late by at most
 * an interval and a look. The kernel log's lines carry their own.
 */
const stamped = (drained: XidEvents | undefined, nowMs: number): XidEvents | undefined =>
  drained && { ...drained, events: drained.events.map((event) => ({ ...event, at: Math.floor(nowMs / 1000) })) };

/**
 * `collect --interval`, the daemon mode: publishes every interval until SIGTERM or SIGINT, then the
 * reader is stopped and the last write finished. Returns the exit status.
 */
export const runDaemon = (plan: CollectPlan & { intervalMs: number }, io: CollectIo): Promise<number> =>
  withCollectLock(plan, io, () => publishEvery(plan, io));

async function publishEvery(plan: CollectPlan & { intervalMs: number }, { say, out }: CollectIo): Promise<number> {
  const state = readState(plan.stateDir);
  const publishTarget = publishTargetOf(plan, state, out);
  // A sample is a millisecond or two of JavaScript per interval. V8's optimizing compiler, TurboFan,
  // kept recompiling it on background threads for minutes, costing as much CPU as the samples
  // themselves (measured: 1.5 ms a sample on top of 1.6); Maglev and the baseline tiers do not.
  setFlagsFromString('--max-opt=2');
  const { daemonLoop } = await import('./daemon-loop.js');
  const { publish, publishFailure, previousSuccessSeconds, removeStaleTemps, removeTextfile, newRenderMemo } = await import(
    '../publish/publish.js'
  );
  publishTarget.memo = newRenderMemo();
  if (!plan.dryRun) {
    for (const name of [plan.fileName, ...(publishTarget.compat ?? []).map((output) => output.fileName)])
      removeStaleTemps(plan.textfileDir, name);
    for (const name of unaskedCompatFiles(plan.compat ?? [], plan.fileName)) removeTextfile(plan.textfileDir, name);
  }
  // NVML's calls block this thread: a watchdog thread bounds each sample's (src/collect/watchdog.ts).
  const watchdog = plan.source === 'nvml' ? (await import('./watchdog.js')).watchdogFor(plan, say) : undefined;
  const source = await openSource(plan.source, { ...plan, deadline: watchdog });
  const stop = new AbortController();
  let stoppedBy: NodeJS.Signals = 'SIGTERM';
  const onSignal = (signal: NodeJS.Signals) => {
    stoppedBy = signal;
    stop.abort();
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  let saved = state;
  let textChecked = false;
  // One kernel log reader for the whole run: each look reads only the records new since the last.
  const xid = xidWatchFor(plan, state);
  // The reader now running: NVML's tells of Xid events, which count while the kernel log cannot be read.
  let reader: RowStream | undefined;
  let cudaVersion = state.cuda?.version || undefined;
  const lastSuccessSeconds = await previousSuccessSeconds(publishTarget);
  let lastLook: { at: number; poll: XidPoll } | undefined;
  const withXid = keptXid();
  const processMemory = new ProcessMemory();
  // Each job's reserved GPUs, read once while its cgroup lives; none for the demo's GPUs, not this host's.
  const reservations = plan.source === 'demo' ? undefined : new ReservationMemory();
  const saveState = async (next: typeof state) => {
    const keep = plan.dryRun ? undefined : stateToKeep(plan.source, saved, next);
    if (!keep) return;
    const error = await writeState(plan.stateDir, saved, keep);
    if (!error) saved = keep;
  };
  try {
    await daemonLoop({
      fields: plan.fields,
      intervalMs: plan.intervalMs,
      // The reader's first row may take as long as a one-shot query may.
      startupGraceMs: plan.timeoutMs,
      processesIntervalMs: plan.processes ? plan.processesIntervalMs : undefined,
      oneShot: async (current, previous) => {
        const result = await collectOnce(plan, current, previous, source, xid, reservations);
        // The streamed samples' nvidia_gpu_info carries it too; a new driver breaks the stream, and
        // the next one-shot learns its version.
        if (result.collection.samples.length > 0) cudaVersion = result.collection.cudaVersion;
        return result;
      },
      // A pid gone from /proc that NVML still lists keeps the job it was seen with (src/host/processes.ts).
      queryProcesses: () => queryProcesses(source.reads(), { ...plan, memory: processMemory, reservations }),
      stream: (fields, names) => {
        reader = source.stream(fields, names, plan.intervalMs);
        return reader;
      },
      publish: async (sampled) => {
        // A streamed sample has no Xid counts of its own: look at the kernel log now, and keep what
        // was counted, so a restart does not count it again.
        let collection = sampled.samples.length > 0 && !sampled.cudaVersion ? { ...sampled, cudaVersion } : sampled;
        if (xid && !sampled.xid) {
          // NVML's events first, then the log: an Xid between the two looks is dropped, never counted twice.
          // A look at most every XID_LOOK_EVERY_MS; the samples between repeat the last one's counts.
          const now = Date.now();
          if (!lastLook || now - lastLook.at >= XID_LOOK_EVERY_MS)
            lastLook = { at: now, poll: xid.poll(stamped(reader?.xidEvents?.(), now)) };
          const { poll } = lastLook;
          collection = withXid(collection, poll, [...sampled.samples.map(knownGpu), ...(saved.gpus ?? [])]);
          if (poll.state && poll.state !== saved.xid) await saveState({ ...saved, xid: poll.state });
        }
        const { textfileError, csvError } = await publish(collection, publishTarget, new Date(), !textChecked);
        textChecked = true;
        if (textfileError) say(textfileError);
        if (csvError) say(csvError);
      },
      saveState,
      say,
      now: Date.now,
      signal: stop.signal,
      initialState: state,
      initialSuccessSeconds: lastSuccessSeconds,
    });
    // Stopped cleanly: the last sample must not be served as current until the staleness alert
    // fires. Every file says so at once (ours and the peers'); the next start publishes within one interval.
    if (!plan.dryRun) {
      const message = `collect --interval was stopped by ${stoppedBy}`;
      const { textfileError } = await publishFailure({ reason: 'collector_stopped', message }, publishTarget, 0, new Date());
      if (textfileError) say(textfileError);
    }
  } finally {
    xid?.close();
    watchdog?.stop();
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
  return 0;
}
