import { getHeapSpaceStatistics } from 'node:v8';
import { heapTidier } from '../../../src/report/store/garbage.js';

// Run by garbage.test.ts in a Node.js of its own (V8's flags are the process's): with `tidy` as its
// argument it makes the tidier first. Prints the young generation's size (bytes) before and after
// objects that survive a few young collections each, as a store's answers do across awaits.

const newSpace = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;

const before = newSpace();
const tidy = process.argv[2] === 'tidy' ? heapTidier() : () => {};
const kept: { i: number; pair: number[] }[][] = [];
for (let round = 0; round < 40; round++) {
  kept.push(Array.from({ length: 100_000 }, (_, i) => ({ i, pair: [i, i + 1] })));
  if (kept.length > 3) kept.shift();
  tidy();
}
process.stdout.write(`${JSON.stringify({ before, after: newSpace(), kept: kept.length })}\n`);
