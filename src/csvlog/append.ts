import { closeSync, constants, fstatSync, openSync, writeSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Collection } from '../metrics.js';
import type { GpuSample } from '../samples.js';
import { CSV_FIELDS, CSV_HEADER, csvLine, localIsoTime } from './columns.js';
import { isLockError, withFileLock } from '../locks/file-lock.js';

export const TASK_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export const csvPath = (dir: string, task: string): string => join(dir, `${task}.csv`);
export const csvLockPath = (dir: string, task: string): string => join(dir, `.${task}.csv.lock`);

interface RowContext {
  time: string;
  host: string;
  task: string;
}

const shownOrEmpty = (sample: GpuSample, query: string): string => {
  const reading = sample.readings.get(query);
  return reading?.kind === 'number' ? reading.shown : reading?.kind === 'text' ? reading.text : '';
};

const emptyValues = (): string[] => CSV_FIELDS.map(() => '');

/**
 * A collection -> CSV lines: one per GPU. Values stay in nvidia-smi's units; a missing value is an
 * empty cell, never 0. A failed collection still leaves a line per GPU (or one line when no GPU is
 * known) whose status is the failure reason and whose values are empty.
 */
export function csvRows(collection: Collection, context: RowContext, knownGpus: readonly { gpu: string; uuid: string }[]): string[] {
  const head = (gpu: string, uuid: string, name: string, status: string) => [context.time, context.host, context.task, gpu, uuid, name, status];
  const failure = collection.health.failure;
  if (failure) {
    const gpus = knownGpus.length > 0 ? knownGpus : [{ gpu: '', uuid: '' }];
    return gpus.map((gpu) => csvLine([...head(gpu.gpu, gpu.uuid, '', failure.reason), ...emptyValues()]));
  }
  return [
    ...collection.samples.map((sample) =>
      csvLine([...head(sample.gpu, sample.uuid, shownOrEmpty(sample, 'name'), 'ok'), ...CSV_FIELDS.map((field) => shownOrEmpty(sample, field.query))]),
    ),
    ...collection.down.map((gpu) => csvLine([...head(gpu.gpu, gpu.uuid, '', gpu.reason), ...emptyValues()])),
  ];
}

/**
 * Appends one sample to <dir>/<task>.csv with a single write() on an O_APPEND descriptor, under
 * the lock the archiver takes too. Writes the header first when the file is new or empty (also
 * right after someone truncated it). Returns the one-line reason when it could not.
 */
export async function appendCsvSample(
  dir: string,
  task: string,
  collection: Collection,
  options: { host: string; now: Date; knownGpus?: readonly { gpu: string; uuid: string }[] },
): Promise<string | undefined> {
  if (!TASK_NAME.test(task)) return `--task: "${task}" must be letters, digits, '.', '_' or '-'`;
  // NAME-YYYYMMDD[-N] is how archives are named: such a live file would be taken for one.
  if (/-\d{8}(-\d+)?$/.test(task)) return `--task: "${task}" must not end in -YYYYMMDD, the archives' suffix`;
  const lines = csvRows(collection, { time: localIsoTime(options.now), host: options.host, task }, options.knownGpus ?? []);
  if (lines.length === 0) return undefined;
  try {
    await mkdir(dir, { recursive: true, mode: 0o755 });
  } catch (error) {
    return `cannot create CSV directory ${dir}: ${(error as NodeJS.ErrnoException).code}`;
  }
  // Synchronous calls under the lock: four of them, each cheaper than a trip through the thread pool.
  const result = await withFileLock(csvLockPath(dir, task), 5000, async () => {
    const fd = openSync(csvPath(dir, task), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o644);
    try {
      const chunk = (fstatSync(fd).size === 0 ? csvLine(CSV_HEADER) : '') + lines.join('');
      writeSync(fd, chunk);
      return undefined;
    } finally {
      closeSync(fd);
    }
  }).catch((error: NodeJS.ErrnoException) => `cannot append to ${csvPath(dir, task)}: ${error.code ?? error.message}`);
  return isLockError(result) ? result.lockError : result;
}
