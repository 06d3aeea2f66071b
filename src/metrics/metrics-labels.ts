// The labels arrays of a collection's series, kept by what they label (metrics.ts builds the families).

/** A series' labels: [name, value] pairs, in the order they are written. */
export type Labels = (readonly [string, string])[];

type Pairs = readonly (readonly [string, string])[];

/**
 * Labels arrays by what they label, kept from one collection to the next by a long-running publisher
 * (one per set of constant labels): a series then has the very same array every sample, and render
 * and the checks, which work on each array once (their memos), do so once per run.
 */
export interface LabelArrays {
  /** Each array, and the last build that used it. */
  kept: Map<string, { labels: Labels; build: number }>;
  /** The build now running, and how many arrays it used. */
  build: number;
  used: number;
  /** The constant labels the arrays start with (names and values): a build with others starts the store afresh. */
  constant?: string;
}

export const newLabelArrays = (): LabelArrays => ({ kept: new Map(), build: 0, used: 0 });

/** Arrays of series gone kept beyond those the last build used, before they are dropped. */
const SPARE_ARRAYS = 1024;

/**
 * Starts a build. Arrays the last build did not use (processes that ended, a GPU swapped out) are
 * dropped once they outnumber those it used by SPARE_ARRAYS: a daemon on a host whose pids keep
 * changing holds about the series of its last build, not every series it ever saw (the per-process
 * labels of a busy host reached 140 MB before the store's old cap of 65,536 arrays).
 */
function startBuild(arrays: LabelArrays, constant: Labels): void {
  let constantKey = '';
  for (const [name, value] of constant) constantKey += `${name.length}:${name}${value.length}:${value}`;
  if (arrays.constant !== constantKey) {
    arrays.kept.clear();
    arrays.constant = constantKey;
  } else if (arrays.kept.size > 2 * arrays.used + SPARE_ARRAYS) {
    for (const [key, entry] of arrays.kept) if (entry.build !== arrays.build) arrays.kept.delete(key);
  }
  arrays.build++;
  arrays.used = 0;
}

export function keptArray(arrays: LabelArrays, key: string, make: () => Labels): Labels {
  let entry = arrays.kept.get(key);
  if (entry === undefined) arrays.kept.set(key, (entry = { labels: make(), build: arrays.build }));
  else if (entry.build === arrays.build) return entry.labels;
  else entry.build = arrays.build;
  arrays.used++;
  return entry.labels;
}

/**
 * `base` and `more`, kept under `key` and more's names and values: the series whose labels are not a
 * field's (identity, errors, processes, MIG devices, Xid codes, health) keep their arrays too.
 */
function keptWith(arrays: LabelArrays, base: Labels, key: string, more: Pairs): Labels {
  let full = key;
  for (const [name, value] of more) full += `\u0000${name}\u0001${value.length}:${value}`;
  return keptArray(arrays, full, () => [...base, ...more]);
}

type Gpu = { gpu: string; uuid: string };

/** A collection's labels: a GPU's, a GPU's with more of their own, the constant ones with more. */
export interface GpuLabels {
  gpuKey: (gpu: Gpu) => string;
  gpuLabels: ((gpu: Gpu) => Labels) & { with: (gpu: Gpu, tag: string, more: Pairs) => Labels };
  constantWith: (tag: string, more: Pairs) => Labels;
}

/** The labels of one build (one collection's families), from the arrays kept; starts the build. */
export function labelsFor(arrays: LabelArrays, constant: Labels): GpuLabels {
  startBuild(arrays, constant);
  // Lengths first: no gpu and uuid run into another's key, whatever characters a source gave them.
  const gpuKey = (gpu: Gpu) => `${gpu.gpu.length}:${gpu.gpu}${gpu.uuid.length}:${gpu.uuid}`;
  // Built once per GPU: every family of every sample starts with them.
  const gpuLabels = Object.assign(
    (gpu: Gpu): Labels => keptArray(arrays, gpuKey(gpu), () => [...constant, ['gpu', gpu.gpu], ['uuid', gpu.uuid]]),
    {
      with: (gpu: Gpu, tag: string, more: Pairs) => keptWith(arrays, gpuLabels(gpu), `${gpuKey(gpu)}\u0002${tag}`, more),
    },
  );
  // Labels on the constant ones alone (Xid codes, health): their keys start where no GPU's can.
  const constantWith = (tag: string, more: Pairs) => keptWith(arrays, constant, `\u0002${tag}`, more);
  return { gpuKey, gpuLabels, constantWith };
}
