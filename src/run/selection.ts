import { visibleGpus, type ListedGpu } from './cuda-visible.js';
import type { Selection } from './summary.js';

/** The job's GPUs now, how they were chosen, and what could not be placed. */
export interface Chosen {
  gpus: ListedGpu[];
  selection: Selection;
  notes: string[];
}

/**
 * The GPUs the job uses, among those nvidia-smi lists: those CUDA_VISIBLE_DEVICES names when it is
 * set (an empty value: none); else those where the job's process tree holds memory; else all, until
 * the tree shows up. A MIG device named only by its own UUID (`MIG-…`) cannot be placed from the
 * variable: the process tree decides then.
 */
export function chooseGpus(listed: readonly ListedGpu[], cudaVisible: string | undefined, treeUuids: ReadonlySet<string>): Chosen {
  const notes: string[] = [];
  if (cudaVisible !== undefined) {
    const visible = visibleGpus(cudaVisible, listed);
    notes.push(...visible.notes);
    if (visible.unplaced.length === 0)
      return { gpus: listed.filter((gpu) => visible.gpus.includes(gpu.gpu)), selection: 'CUDA_VISIBLE_DEVICES', notes };
    notes.push(`CUDA_VISIBLE_DEVICES names MIG devices (${visible.unplaced.join(', ')}): their GPUs are found by the job's processes`);
  }
  const tree = listed.filter((gpu) => treeUuids.has(gpu.uuid));
  if (tree.length > 0) return { gpus: tree, selection: 'process tree', notes };
  return { gpus: [...listed], selection: 'all', notes };
}
