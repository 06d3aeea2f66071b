import { hostname } from 'node:os';
import type { Collection } from '../collection.js';
import type { Host } from '../host/host.js';
import { addSample, type RunTotals } from './accumulate.js';
import type { ListedGpu } from './cuda-visible.js';
import { jobFamilies, type JobIdentity } from './job-info.js';
import { marksCell, type Mark } from './marks.js';
import type { RunPlan } from './plan.js';
import { treeGpuUuids } from './process-tree.js';
import { runSample } from './samples.js';
import { chooseGpus, type Chosen } from './selection.js';

/** The CSV columns `run` adds after the trail's own. */
export const RUN_COLUMNS = ['step', 'marks'] as const;

/** What the sampler keeps between collections. */
export interface SamplerState {
  totals: RunTotals;
  /** Every GPU nvidia-smi listed, by index. */
  listed: Map<string, ListedGpu>;
  /** UUIDs of the GPUs where the job's process tree was seen. */
  treeUuids: Set<string>;
  /** The last line of the job's output that matched --mark. */
  lastMark?: Mark;
  chosen: () => Chosen;
}

export function newSamplerState(totals: RunTotals, cudaVisible: string | undefined): SamplerState {
  const state: SamplerState = {
    totals,
    listed: new Map(),
    treeUuids: new Set(),
    chosen: () => chooseGpus([...state.listed.values()], cudaVisible, state.treeUuids),
  };
  return state;
}

/**
 * One collection while the job runs: the job's GPUs are chosen again (its processes may just have
 * appeared), their samples added to the totals, the CSV rows appended with the last step and marks,
 * and the textfile written with the job's identity. Returns the one-line problems, if any.
 */
export async function takeCollection(
  collection: Collection,
  state: SamplerState,
  context: { plan: RunPlan; job: JobIdentity; host: Host; now: number },
): Promise<string[]> {
  const { plan, now } = context;
  const failure = collection.health.failure;
  if (failure) {
    const reason = `${failure.reason}: ${failure.message}`;
    if (!state.totals.failures.includes(reason)) state.totals.failures.push(reason);
  }
  for (const gpu of [...collection.samples, ...collection.down]) state.listed.set(gpu.gpu, { gpu: gpu.gpu, uuid: gpu.uuid });
  for (const uuid of treeGpuUuids(collection.processes?.apps ?? [], context.job.pid, context.host)) state.treeUuids.add(uuid);
  const chosen = state.chosen();
  const mine = new Set(chosen.gpus.map((gpu) => gpu.gpu));
  const ofJob: Collection = {
    ...collection,
    samples: collection.samples.filter((sample) => mine.has(sample.gpu)),
    down: collection.down.filter((gpu) => mine.has(gpu.gpu)),
  };
  for (const sample of ofJob.samples) {
    const taken = runSample(sample, sample.takenAt ?? now);
    // A gap of more than five intervals is a broken stream, not a sample period.
    if (taken) addSample(state.totals, taken, 5 * plan.intervalMs);
  }
  const problems: string[] = [];
  if (plan.csvDir) {
    const { appendCsvSample } = await import('../csvlog/append.js');
    const { csvHost } = await import('../csvlog/columns.js');
    const mark = state.lastMark;
    const csvError = await appendCsvSample(plan.csvDir, plan.task, ofJob, {
      host: csvHost(hostname(), plan.collect.source),
      now: new Date(now),
      knownGpus: chosen.gpus,
      extra: { header: RUN_COLUMNS, cells: [mark?.step === undefined ? '' : String(mark.step), marksCell(mark?.marks ?? [])] },
    });
    if (csvError) problems.push(csvError);
  }
  if (plan.textfileDir) {
    const { publish } = await import('../publish/publish.js');
    const { textfileError } = await publish(
      ofJob,
      {
        textfileDir: plan.textfileDir,
        fileName: plan.fileName,
        dryRun: false,
        labels: plan.collect.labels,
        out: process.stdout,
        extraFamilies: () => jobFamilies(context.job, chosen.gpus),
      },
      new Date(now),
    );
    if (textfileError) problems.push(textfileError);
  }
  return problems;
}
