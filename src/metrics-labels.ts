// The labels arrays of a collection's series, kept by what they label (metrics.ts builds the families).

/** A series' labels: [name, value] pairs, in the order they are written. */
export type Labels = (readonly [string, string])[];

type Pairs = readonly (readonly [string, string])[];

/**
 * Labels arrays by what they label, kept from one collection to the next by a long-running publisher
 * (one per set of constant labels): a series then has the very same array every sample, and render
 * and the checks, which work on each array once (their memos), do so once per run. Cleared when it
 * holds more than any host's series need.
 */
export type LabelArrays = Map<string, Labels>;
const MAX_LABEL_ARRAYS = 65_536;

export function keptArray(arrays: LabelArrays, key: string, make: () => Labels): Labels {
  let labels = arrays.get(key);
  if (labels === undefined) {
    if (arrays.size >= MAX_LABEL_ARRAYS) arrays.clear();
    arrays.set(key, (labels = make()));
  }
  return labels;
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

export function labelsFor(arrays: LabelArrays, constant: Labels): GpuLabels {
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
