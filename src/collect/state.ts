import { FIELDS } from '../fields/fields.js';
import { fieldNames, type FieldSpec } from '../fields/field-spec.js';
import type { KnownGpu } from '../collection.js';
import { validXidState, type XidState } from '../xid/count.js';
import { validStuck, type StuckChild } from './stuck.js';
import { describeFileError, isFileError, pinDir, pinDirIfAny, readSmallFile, replaceFile } from '../files/safe-fs.js';
import { FILE_STEPS, type FileSteps } from '../files/file-steps.js';

/** What one run leaves for the next: the driver's field names and the GPUs last seen. */
export interface CollectorState {
  /** Driver the names below were learned for. */
  driverVersion?: string;
  /** FieldSpec.query -> the name this driver accepts, or '' when it accepts none of the field's names. */
  names?: Record<string, string>;
  gpus?: KnownGpu[];
  /** The CUDA version of the driver named here (nvidia_gpu_info's cuda_version): asked once per driver. */
  cuda?: { driverVersion: string; version: string };
  /** Xid errors counted from the kernel log so far, and where in the log counting stopped. */
  xid?: XidState;
  /** nvidia-smi runs killed that did not end (asleep in the driver): no other starts while one is there. */
  stuck?: StuckChild[];
}

const FILE = 'state.json';
/** The state is a few kilobytes; anything much larger was not written by us. */
const MAX_BYTES = 1024 * 1024;

/** Reads <dir>/state.json; a missing, damaged or implausible file is an empty state (the run then learns again). */
export function readState(dir: string | undefined): CollectorState {
  const pinned = dir ? pinDirIfAny(dir) : undefined;
  if (!pinned) return {};
  let text: string | undefined;
  try {
    text = readSmallFile(pinned, FILE, MAX_BYTES);
  } finally {
    pinned.close();
  }
  if (text === undefined) return {};
  try {
    return validState(JSON.parse(text));
  } catch (error) {
    // Damaged (a SyntaxError): relearning costs one extra call. Anything else is a bug.
    if (error instanceof SyntaxError) return {};
    throw error;
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The names, if each maps a field of the table to one of that field's own names (or '' for none):
 * a file that maps temperature.gpu to power.draw would make temperatures report watts. One bad
 * entry discards them all; relearning costs one --help-query-gpu call.
 */
function validNames(value: unknown, fields: readonly FieldSpec[]): Record<string, string> | undefined {
  if (!isRecord(value)) return undefined;
  const byQuery = new Map(fields.map((field) => [field.query, field]));
  const entries = Object.entries(value);
  const fits = entries.every(([query, name]) => {
    const field = byQuery.get(query);
    return field !== undefined && typeof name === 'string' && (name === '' || fieldNames(field).includes(name));
  });
  return fits && value.index && value.uuid ? (Object.fromEntries(entries) as Record<string, string>) : undefined;
}

// A GPU is passed to nvidia-smi as `-i <uuid or bus id>`: only well-formed values are kept.
const GPU_INDEX = /^(\d{1,4})?$/;
const GPU_UUID = /^((GPU|MIG)-[0-9A-Za-z-]{1,80})?$/;
const BUS_ID = /^([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])?$/;

const validGpu = (value: unknown): value is KnownGpu =>
  isRecord(value) &&
  typeof value.gpu === 'string' &&
  typeof value.uuid === 'string' &&
  typeof value.busId === 'string' &&
  GPU_INDEX.test(value.gpu) &&
  GPU_UUID.test(value.uuid) &&
  BUS_ID.test(value.busId) &&
  (value.uuid !== '' || value.busId !== '');

/** A parsed state file checked against the field table; what does not fit is discarded. */
export function validState(parsed: unknown, fields: readonly FieldSpec[] = FIELDS): CollectorState {
  if (!isRecord(parsed)) return {};
  const state: CollectorState = {};
  const version = parsed.driverVersion;
  const versionFits = version === undefined || (typeof version === 'string' && /^[\w.-]{1,64}$/.test(version));
  if (typeof version === 'string' && versionFits) state.driverVersion = version;
  // Names belong to the driver version next to them: a bad version takes them along.
  const names = versionFits ? validNames(parsed.names, fields) : undefined;
  if (names) state.names = names;
  const cuda = parsed.cuda;
  if (
    isRecord(cuda) &&
    typeof cuda.driverVersion === 'string' &&
    /^[\w.-]{1,64}$/.test(cuda.driverVersion) &&
    typeof cuda.version === 'string' &&
    /^(\d{1,4}\.\d{1,4})?$/.test(cuda.version)
  )
    state.cuda = { driverVersion: cuda.driverVersion, version: cuda.version };
  const xid = validXidState(parsed.xid);
  if (xid) state.xid = xid;
  const stuck = validStuck(parsed.stuck);
  if (stuck && stuck.length > 0) state.stuck = stuck;
  if (Array.isArray(parsed.gpus)) state.gpus = parsed.gpus.filter(validGpu).map(({ gpu, uuid, busId }) => ({ gpu, uuid, busId }));
  return state;
}

/**
 * Writes the state when it changed. Returns why it could not, if it could not: state is optional.
 * Through safe-fs, not write-file-atomic, for the reasons given in src/publish/textfile.ts.
 */
export async function writeState(
  dir: string | undefined,
  before: CollectorState,
  after: CollectorState,
  steps: FileSteps = FILE_STEPS,
): Promise<string | undefined> {
  if (!dir || JSON.stringify(before) === JSON.stringify(after)) return undefined;
  try {
    const pinned = pinDir(dir, { create: true });
    try {
      replaceFile(pinned, FILE, `${JSON.stringify(after, null, 1)}\n`, { mode: 0o644, steps });
    } finally {
      pinned.close();
    }
    return undefined;
  } catch (error) {
    if (!isFileError(error)) throw error;
    return `state not saved in ${dir}: ${describeFileError(error)}`;
  }
}
