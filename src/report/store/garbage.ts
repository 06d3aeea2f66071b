import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// The store door's report is a batch whose garbage dwarfs what it keeps: each answer's parsed JSON
// and each GPU's answers once made into its buckets. V8 lets the old generation grow to about four
// times what was alive at its last full collection before collecting again, and the report ends
// first: at 40 hosts x 8 GPUs x 30 days it peaked at 221 MiB with under 55 MB alive (BENCHMARKS.md,
// "Issue 37: what the store door's memory is"). Collecting the whole heap whenever it grew by half
// of what was alive (32 MB at least) keeps the peak near what is alive, at the price of the
// collections (each costs about what is alive). V8's collector is reached as Jest reaches it:
// --expose-gc set at run time holds for a context made afterwards, whose global `gc` collects.
//
// The young generation is kept at the size it has: the answers live across awaits, so V8 saw them
// survive and grew it to its most, which Node.js 24 sets at 128 MB (Node.js 20: 32 MB), all of it
// touched. At 40 hosts' month that alone was 262-276 MiB of peak RSS on Node.js 24, 156-161 MiB kept,
// for more CPU where answers come faster than they are read (BENCHMARKS.md, "Issue 37: the young
// generation"). Its most cannot be lowered once V8 has started (--max-semi-space-size is read then),
// but its growth factor is read at each growth.

/** Collects the whole heap if it grew enough since the last collection; nothing where there is no collector. */
export type TidyHeap = () => void;

/** Heap growth that is never worth a collection, in bytes. */
const MIN_GROWTH = 32 * 1024 * 1024;

/** The heap's tidier: a collection once the heap is half again what survived the last one; the young generation kept as it is. */
export function heapTidier(): TidyHeap {
  let gc: unknown;
  try {
    setFlagsFromString('--semi-space-growth-factor=1');
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('typeof gc === "function" ? gc : undefined');
  } catch {
    gc = undefined;
  }
  if (typeof gc !== 'function') return () => {};
  const used = () => getHeapStatistics().used_heap_size;
  let survivors = used();
  return () => {
    if (used() < survivors + Math.max(MIN_GROWTH, survivors / 2)) return;
    gc();
    survivors = used();
  };
}
