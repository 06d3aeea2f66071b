import { join } from 'node:path';
import { makeDirIfPossible, readTextIfAny } from './files.js';
import type { KnownGpu } from './nvidia-smi/query-gpu.js';

/** What one run leaves for the next: the driver's field names and the GPUs last seen. */
export interface CollectorState {
  /** Driver the names below were learned for. */
  driverVersion?: string;
  /** FieldSpec.query -> the name this driver accepts. */
  names?: Record<string, string>;
  gpus?: KnownGpu[];
}

const FILE = 'state.json';

/** Reads <dir>/state.json; a missing or damaged file is an empty state (the run then learns again). */
export function readState(dir: string | undefined): CollectorState {
  if (!dir) return {};
  const text = readTextIfAny(join(dir, FILE));
  if (text === undefined) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null ? (parsed as CollectorState) : {};
  } catch (error) {
    // Damaged (a SyntaxError): relearning costs one extra call. Anything else is a bug.
    if (error instanceof SyntaxError) return {};
    throw error;
  }
}

/** Writes the state when it changed. Returns why it could not, if it could not: state is optional. */
export async function writeState(dir: string | undefined, before: CollectorState, after: CollectorState): Promise<string | undefined> {
  if (!dir || JSON.stringify(before) === JSON.stringify(after)) return undefined;
  makeDirIfPossible(dir);
  const { default: writeFileAtomic } = await import('write-file-atomic');
  return writeFileAtomic(join(dir, FILE), `${JSON.stringify(after, null, 1)}\n`, { mode: 0o644 }).then(
    () => undefined,
    (error: NodeJS.ErrnoException) => `state not saved in ${dir}: ${error.code ?? error.message}`,
  );
}
