import { hostname } from 'node:os';
import { join } from 'node:path';
import { csvHost } from '../csvlog/columns.js';
import { unaskedCompatFiles } from '../compat/compat-file.js';
import type { PublishTarget } from '../publish/publish.js';
import type { Source } from '../sources/source.js';
import type { HeadStart } from '../sources/sources.js';
import { openSource } from '../sources/sources.js';
import { readState, writeState, type CollectorState } from './state.js';
import { watchXids, type XidWatch } from '../xid/watch.js';
import { ReservationMemory } from '../host/reservations.js';
import { collect, type CollectOutput } from './collect.js';
import { withCollectLock } from './lock.js';
import { publishTargetFrom, targetPlanOf } from './publish-target.js';
import type { CollectIo, CollectPlan } from './plan.js';

/** Where the plan publishes; `knownGpus` are the GPUs of the state read at the start. */
export const publishTargetOf = (plan: CollectPlan, state: CollectorState, out: PublishTarget['out']): PublishTarget => ({
  ...publishTargetFrom(targetPlanOf(plan), out),
  csv: plan.csv ? { ...plan.csv, host: csvHost(hostname(), plan.source), knownGpus: () => state.gpus ?? [] } : undefined,
});

/** The Host's kernel log as an Xid counter, for a real source: the demo's GPUs are not this host's. */
export const xidWatchFor = (plan: CollectPlan, state: CollectorState): XidWatch | undefined =>
  plan.source === 'demo' ? undefined : watchXids(plan.host, state.xid);

/**
 * What of `next` a run of `source` keeps in the state, or undefined to keep nothing. The field names
 * are nvidia-smi's for its driver: the demo's and NVML's are ours, which nvidia-smi must not take
 * for its own, so NVML keeps the ones there. The demo's GPUs are not this host's: it keeps nothing.
 */
export function stateToKeep(source: CollectPlan['source'], saved: CollectorState, next: CollectorState): CollectorState | undefined {
  if (source === 'demo') return undefined;
  if (source === 'nvidia-smi') return next;
  const { driverVersion, names, ...rest } = next;
  return {
    ...rest,
    ...(saved.driverVersion !== undefined ? { driverVersion: saved.driverVersion } : {}),
    ...(saved.names ? { names: saved.names } : {}),
  };
}

/**
 * One collection from the plan's source (the daemon mode passes the one it keeps open, and its kernel
 * log reader); a failed one carries doctor's file checks' verdict.
 */
export async function collectOnce(
  plan: CollectPlan,
  state: CollectorState,
  previousSuccessSeconds: number | undefined,
  source?: Source,
  xid?: XidWatch,
  reservations?: ReservationMemory,
): Promise<CollectOutput> {
  const output = await collect({
    reads: (source ?? (await openSource(plan.source, plan))).reads(),
    fields: plan.fields,
    processes: plan.processes,
    maxProcesses: plan.maxProcesses,
    state,
    previousSuccessSeconds,
    host: plan.host,
    now: Date.now,
    xid,
    reservations: plan.source === 'demo' ? undefined : (reservations ?? new ReservationMemory()),
  });
  if (!output.collection.health.failure) return output;
  const { withDiagnosis } = await import('../doctor/quick.js');
  return { ...output, collection: await withDiagnosis(output.collection, plan.host) };
}

/**
 * What a one-shot run opens and loads on its way, in the order that matters: the source, whose calls
 * then start, and the publishing code, loaded while they run. Tests pass their own to see that order.
 */
export interface OneShotSteps {
  openSource: typeof openSource;
  loadPublish: () => Promise<typeof import('../publish/publish.js')>;
}

/** The steps production takes (the bundle keeps the publishing code unevaluated until then). */
export const ONE_SHOT_STEPS: OneShotSteps = { openSource, loadPublish: () => import('../publish/publish.js') };

/**
 * `collect` without --interval: one collection, published. Returns the exit status. SIGTERM or
 * SIGINT before the sample is read (systemctl stop, a unit's TimeoutStartSec, Ctrl-C) publishes
 * collector_stopped to every file the run owns, releases the lock, and the process then ends by that
 * signal as it would have (nvidia-smi's group goes with it: src/sources/nvidia-smi/orphan-guard.ts).
 * One that comes later lets the sample's publishing finish first.
 */
export async function runOneShot(
  plan: CollectPlan,
  io: CollectIo,
  steps: OneShotSteps = ONE_SHOT_STEPS,
  headStart?: HeadStart,
): Promise<number> {
  const stop = listenForStop();
  // The source the run opens, told at the end how the run went (what it keeps for the next start).
  let opened: Source | undefined;
  const openSource: OneShotSteps['openSource'] = async (name, options) => {
    opened = await steps.openSource(name, { ...options, headStart });
    return opened;
  };
  let end: RunEnd | undefined;
  try {
    const status = await withCollectLock(plan, io, async () => {
      end = await collectAndPublish(plan, io, { ...steps, openSource }, stop.stopped);
      return end.status;
    });
    return status;
  } finally {
    // A run that wrote nothing (--dry-run) leaves nothing for the next either.
    opened?.settle?.({ succeeded: end?.status === 0 && !plan.dryRun, stuck: end?.stuck ?? false });
    headStart?.drop();
    stop.end();
  }
}

/** The stop signals while a one-shot run lasts: `stopped` resolves to the first; `end` raises it again, unheard. */
function listenForStop(): { stopped: Promise<NodeJS.Signals>; end: () => void } {
  let received: NodeJS.Signals | undefined;
  let heard: (signal: NodeJS.Signals) => void = () => undefined;
  const stopped = new Promise<NodeJS.Signals>((resolve) => (heard = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    received ??= signal;
    heard(signal);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return {
    stopped,
    end: () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
      if (received) process.kill(process.pid, received);
    },
  };
}

/** How a run ended: its exit status, and whether an nvidia-smi stuck in the driver is known (this run's or an earlier one's). */
interface RunEnd {
  status: number;
  stuck: boolean;
}

async function collectAndPublish(
  plan: CollectPlan,
  { say, out }: CollectIo,
  steps: OneShotSteps,
  stopped: Promise<NodeJS.Signals>,
): Promise<RunEnd> {
  const started = Date.now();
  const state = readState(plan.stateDir);
  const xid = xidWatchFor(plan, state);
  // NVML's calls block this thread: a watchdog thread bounds them (started before the library loads).
  const watchdog = plan.source === 'nvml' ? (await import('./watchdog.js')).watchdogFor(plan, say) : undefined;
  const source = await steps.openSource(plan.source, watchdog ? { ...plan, deadline: watchdog } : plan);
  // The source's calls (both nvidia-smi runs) start inside this call, before its first await: all
  // that follows, the publishing code's loading, the peers' targets and the clean-up of temp files,
  // runs while they do instead of before (a one-shot run's wall time is its start-up plus the
  // longer call plus what comes after it).
  const collecting = collectOnce(plan, state, undefined, source, xid).finally(() => {
    xid?.close();
    // No NVML call follows: the watchdog's thread is stopped now, while the file is written.
    watchdog?.stop();
  });
  const publishTarget = publishTargetOf(plan, state, out);
  const { publish, publishFailure, previousSuccessSeconds, removeStaleTemps, removeTextfile } = await steps.loadPublish();
  // Temp files a killed run left behind, and the peers' files --compat no longer asks for.
  if (!plan.dryRun) {
    for (const name of [plan.fileName, ...(publishTarget.compat ?? []).map((output) => output.fileName)])
      removeStaleTemps(plan.textfileDir, name);
    for (const name of unaskedCompatFiles(plan.compat ?? [], plan.fileName)) removeTextfile(plan.textfileDir, name);
  }
  const first = await Promise.race([collecting, stopped]);
  if (typeof first === 'string') {
    // Stopped before the sample was read: whatever nvidia-smi or NVML still does is dropped.
    const message = `collect was stopped by ${first} before its sample was read`;
    const stop = await publishFailure({ reason: 'collector_stopped', message }, publishTarget, (Date.now() - started) / 1000, new Date());
    const where = plan.dryRun ? 'printed' : `wrote ${join(plan.textfileDir, plan.fileName)}`;
    say(`collector_stopped: ${message} (${stop.textfileError ?? `${where} with the health block only`})`);
    return { status: 1, stuck: false };
  }
  const collected = first;
  const { health } = collected.collection;
  // A failed run carries the last good run's time over from the file it replaces.
  const result = health.failure
    ? {
        ...collected,
        collection: { ...collected.collection, health: { ...health, lastSuccessSeconds: await previousSuccessSeconds(publishTarget) } },
      }
    : collected;
  const { failure, textfileError, csvError } = await publish(result.collection, publishTarget, new Date());
  const diagnosis = result.collection.health.diagnosis;
  const stuck = (result.state.stuck ?? []).length > 0;
  if (textfileError) {
    say(textfileError);
    return { status: 1, stuck };
  }
  if (csvError) say(csvError);
  const keep = plan.dryRun ? undefined : stateToKeep(plan.source, state, result.state);
  if (keep) {
    const stateError = await writeState(plan.stateDir, state, keep);
    if (stateError) say(`${stateError} (each run then also asks nvidia-smi --help-query-gpu; see --state-dir)`);
  }
  for (const warning of result.warnings) say(warning);
  if (failure) {
    const where = plan.dryRun ? 'printed' : `wrote ${join(plan.textfileDir, plan.fileName)}`;
    // Every GPU lost: the file names them down (nvidia_gpu_up 0) beside the health block.
    const what = result.collection.down.length > 0 ? 'the health block and the GPUs down' : 'the health block only';
    const hint = diagnosis ? `gpu-textfile doctor says ${diagnosis.verdict}: ${diagnosis.summary}` : 'try: gpu-textfile doctor';
    say(`${failure.reason}: ${failure.message} (${where} with ${what}; ${hint})${demoHint(failure.reason, diagnosis?.verdict)}`);
    return { status: 1, stuck };
  }
  // The textfile is published, but the trail lost this sample: not a success.
  return { status: csvError ? 1 : 0, stuck };
}

/** On a host without a GPU, where to see what gpu-textfile produces all the same. */
export const demoHint = (reason: string, verdict: string | undefined): string =>
  reason === 'nvidia_smi_not_found' || verdict === 'no_gpu_on_pci' || verdict === 'container_without_gpu'
    ? '; to see what gpu-textfile produces without a GPU: gpu-textfile collect --dry-run --source demo'
    : '';
