import { join } from 'node:path';
import { isSample, type Failure, type GpuSample, type KnownGpu, type RowProblem } from '../../collection.js';
import { FIELDS } from '../../fields/fields.js';
import type { FieldSpec } from '../../fields/field-spec.js';
import { listIfAny, readTextIfAny, type Host } from '../../host/host.js';
import { outputLines, splitCells } from './cells.js';
import { classifyFailure } from './failure.js';
import { parseHelpQueryGpu, resolveQueryNames } from './help-query-gpu.js';
import { sampleFromCells } from './rows.js';
import type { SmiRunner } from './run.js';
import type { GpuRead } from '../source.js';

export const queryGpuArgs = (names: readonly string[], select?: string): string[] => [
  `--query-gpu=${names.join(',')}`,
  '--format=csv,noheader,nounits',
  ...(select === undefined ? [] : ['-i', select]),
];

/**
 * The driver's name for every field of the table, not only those asked for now, and '' for a field
 * it does not know: an option enabled on a later run (--slow-fields) then finds its fields answered
 * in the state, and a field missing from it means the state predates that field or that option.
 */
async function learnNames(run: SmiRunner, fields: readonly FieldSpec[]): Promise<Record<string, string> | Failure> {
  const outcome = await run(['--help-query-gpu']);
  if (outcome.kind !== 'ok') return classifyFailure(outcome, 'nvidia-smi --help-query-gpu');
  const table = [...FIELDS, ...fields.filter((field) => !FIELDS.includes(field))];
  const names = {
    ...Object.fromEntries(table.map((field) => [field.query, ''])),
    ...resolveQueryNames(table, parseHelpQueryGpu(outcome.stdout)),
  };
  if (!names.index || !names.uuid) {
    return { reason: 'unparsable_output', message: 'nvidia-smi --help-query-gpu lists neither "index" nor "uuid"' };
  }
  return names;
}

const isFailure = (value: Record<string, string> | Failure): value is Failure =>
  typeof (value as Failure).reason === 'string' && typeof (value as Failure).message === 'string';

type Row = { line: string; row: GpuSample | RowProblem };

const parseRows = (fields: readonly FieldSpec[], stdout: string): Row[] =>
  outputLines(stdout).map((line) => ({ line, row: sampleFromCells(fields, splitCells(line), line) }));

/**
 * Rows -> samples and problems, where a GPU (by index or UUID) that nvidia-smi printed on more than
 * one row is unparsable: which row is right would be a guess, and two samples of one GPU would be
 * duplicate series that break the whole file. The other GPUs keep reporting.
 */
export function oneRowPerGpu(rows: readonly Row[]): { samples: GpuSample[]; problems: RowProblem[] } {
  const keys = (row: GpuSample | RowProblem) => [row.gpu === undefined ? '' : `index ${row.gpu}`, row.uuid ?? ''].filter(Boolean);
  const seen = new Map<string, number>();
  for (const { row } of rows) for (const key of keys(row)) seen.set(key, (seen.get(key) ?? 0) + 1);
  const repeated = (row: GpuSample | RowProblem) => keys(row).some((key) => seen.get(key)! > 1);
  const samples: GpuSample[] = [];
  const problems: RowProblem[] = [];
  const reported = new Set<string>();
  for (const { line, row } of rows) {
    if (!repeated(row)) {
      if (isSample(row)) samples.push(row);
      else problems.push(row);
      continue;
    }
    // One problem per GPU: each becomes an nvidia_gpu_up 0 series, which must not repeat either.
    const key = `${row.gpu ?? ''} ${row.uuid ?? ''}`;
    if (reported.has(key)) continue;
    reported.add(key);
    problems.push({
      line,
      gpu: row.gpu,
      uuid: row.uuid,
      message: `GPU ${row.gpu ?? '?'} (${row.uuid ?? 'uuid unknown'}) is on more than one row`,
    });
  }
  return { samples, problems };
}

/** GPUs the kernel knows: /proc/driver/nvidia/gpus/<bus id>/information. */
export function kernelGpus(host: Host): KnownGpu[] {
  const dir = join(host.proc, 'driver/nvidia/gpus');
  return listIfAny(dir).map((busId) => {
    const info = readTextIfAny(join(dir, busId, 'information')) ?? '';
    const uuid = /^GPU UUID:\s*(\S+)/m.exec(info)?.[1] ?? '';
    return { gpu: '', uuid, busId };
  });
}

export interface GpuQueryOptions {
  run: SmiRunner;
  fields: readonly FieldSpec[];
  /** Names this driver accepted last time, if known. */
  knownNames?: Record<string, string>;
  /** Where to find GPUs when one is lost and the all-GPU query fails. */
  knownGpus: () => KnownGpu[];
}

/**
 * One sample of every GPU: a single --query-gpu call in the steady state. Learns the driver's
 * field names when they are unknown or rejected; when one GPU is lost, asks each GPU alone.
 */
export async function queryGpus(options: GpuQueryOptions): Promise<GpuRead> {
  const { run, fields } = options;
  let learned = false;
  // Names learned while fewer fields were asked for (or by an older table) do not cover these: learn again.
  let names =
    options.knownNames && fields.every((field) => Object.hasOwn(options.knownNames!, field.query)) ? options.knownNames : undefined;
  if (!names) {
    const result = await learnNames(run, fields);
    if (isFailure(result)) return { kind: 'failed', failure: result, learned: true };
    names = result;
    learned = true;
  }
  const queried = () => fields.filter((field) => names![field.query]);
  const ask = (select?: string) =>
    run(
      queryGpuArgs(
        queried().map((field) => names![field.query]!),
        select,
      ),
    );

  let outcome = await ask();
  if (outcome.kind === 'exit' && classifyFailure(outcome, '').reason === 'invalid_field' && !learned) {
    // The driver changed under us: learn its names again, once.
    const result = await learnNames(run, fields);
    if (isFailure(result)) return { kind: 'failed', failure: result, learned: true };
    names = result;
    learned = true;
    outcome = await ask();
  }

  if (outcome.kind === 'ok') {
    const { samples, problems } = oneRowPerGpu(parseRows(queried(), outcome.stdout));
    if (samples.length === 0) {
      const detail = problems[0] ? `${problems[0].message}: "${problems[0].line.slice(0, 120)}"` : 'no rows';
      return { kind: 'failed', learned, names, failure: { reason: 'unparsable_output', message: `nvidia-smi --query-gpu: ${detail}` } };
    }
    return { kind: 'ok', samples, problems, lost: [], fields: queried(), names, learned };
  }

  const failure = classifyFailure(outcome, 'nvidia-smi --query-gpu');
  if (failure.reason !== 'gpu_lost') return { kind: 'failed', failure, learned, names };

  // One GPU is lost and takes the all-GPU query with it: ask every GPU we know of on its own.
  // Each GPU once: asked twice, it would answer on two rows and be taken for unparsable.
  const candidates = [...new Map(options.knownGpus().map((gpu) => [gpu.uuid || gpu.busId, gpu])).values()];
  const answers = await Promise.all(candidates.map(async (gpu) => ({ gpu, outcome: await ask(gpu.uuid || gpu.busId) })));
  const rows: Row[] = [];
  const lost: (KnownGpu & { message: string })[] = [];
  for (const { gpu, outcome: one } of answers) {
    if (one.kind === 'ok') {
      rows.push(...parseRows(queried(), one.stdout));
    } else {
      lost.push({ ...gpu, message: classifyFailure(one, `nvidia-smi -i ${gpu.uuid || gpu.busId}`).message });
    }
  }
  const { samples, problems } = oneRowPerGpu(rows);
  if (samples.length === 0) return { kind: 'failed', failure, learned, names };
  return { kind: 'ok', samples, problems, lost, fields: queried(), names, learned };
}
