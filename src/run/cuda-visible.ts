/** A GPU as nvidia-smi lists it: its index and UUID (`GPU-d9041e44-…`). */
export interface ListedGpu {
  gpu: string;
  uuid: string;
}

/** Which GPUs CUDA_VISIBLE_DEVICES lets the job see, or why some entry could not be placed. */
export interface VisibleGpus {
  /** nvidia-smi indices of the GPUs the job can see (in CUDA's order). */
  gpus: string[];
  /** One line for each entry that names no GPU nvidia-smi lists (CUDA ignores it and the rest). */
  notes: string[];
  /** Entries that name MIG devices whose parent GPU the variable does not say: only the process tree can tell. */
  unplaced: string[];
}

/**
 * CUDA_VISIBLE_DEVICES -> the GPUs the job can use, by CUDA's rules: entries are indices or UUIDs
 * (`GPU-…`, any unique prefix of one), separated by commas; the list ends at the first entry that
 * names no GPU (CUDA ignores it and everything after it). MIG entries: `MIG-GPU-<gpu uuid>/<gi>/<ci>`
 * (CUDA 11.0) names its parent GPU; `MIG-<uuid>` does not, and is returned in `unplaced`.
 * Indices are nvidia-smi's: CUDA's own order agrees with it under CUDA_DEVICE_ORDER=PCI_BUS_ID, or
 * when all GPUs are alike (docs/run.md).
 */
export function visibleGpus(value: string, listed: readonly ListedGpu[]): VisibleGpus {
  const result: VisibleGpus = { gpus: [], notes: [], unplaced: [] };
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') break;
    const legacyMig = /^MIG-(GPU-[0-9a-fA-F-]+)\/\d+\/\d+$/.exec(entry);
    if (/^MIG-/.test(entry) && !legacyMig) {
      result.unplaced.push(entry);
      continue;
    }
    const wanted = legacyMig ? legacyMig[1]! : entry;
    const found = /^\d+$/.test(wanted)
      ? listed.filter((gpu) => gpu.gpu === String(Number(wanted)))
      : listed.filter((gpu) => gpu.uuid.toLowerCase().startsWith(wanted.toLowerCase()));
    if (found.length !== 1) {
      result.notes.push(
        `CUDA_VISIBLE_DEVICES entry "${entry}" ${found.length === 0 ? 'names no GPU nvidia-smi lists' : 'matches more than one GPU'}: CUDA ignores it and the entries after it`,
      );
      break;
    }
    if (!result.gpus.includes(found[0]!.gpu)) result.gpus.push(found[0]!.gpu);
  }
  return result;
}
