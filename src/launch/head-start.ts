import { unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  type HeadStart,
  type HeadStartRecord,
  headStartName,
  noHeadStart,
  parseRecord,
  recordFits,
} from '../sources/nvidia-smi/head-start.js';
import { readOwnCache } from './code-cache.js';

/** Starts a record's calls (src/sources/nvidia-smi/head-start-calls.ts): given lazily, see main.ts. */
export type StartCalls = (file: string, record: HeadStartRecord) => HeadStart;

/**
 * The head start of a `collect` run (src/sources/nvidia-smi/head-start.ts): the calls the last run
 * of this command line left a record of, started now, before the CLI loads; or none, with the
 * record's path for the run to leave one. The record is claimed (removed) before anything starts:
 * a second run at once finds none. `starter` is asked for only when there is a record to start.
 */
export function headStartFor(
  cacheDir: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  uid: number,
  starter: () => StartCalls,
): HeadStart {
  const file = join(cacheDir, headStartName(args, env));
  const text = readOwnCache(file, uid, (info) => recordFits(info, Date.now()));
  if (text === undefined) return noHeadStart(file);
  try {
    unlinkSync(file);
  } catch {
    // Claimed by another run since it was read (or not ours to remove): that run starts the calls.
    return noHeadStart(file);
  }
  const record = parseRecord(text.toString('utf8'));
  return record ? starter()(file, record) : noHeadStart(file);
}
