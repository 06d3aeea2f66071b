import type { FieldSpec } from '../../fields.js';
import type { Host } from '../../host.js';
import type { RowStream, Source, SourceReads } from '../source.js';
import { splitCells } from './cells.js';
import { COMPUTE_APPS_ARGS, parseComputeApps } from './compute-apps.js';
import { classifyFailure } from './failure.js';
import { kernelGpus, queryGpuArgs, queryGpus } from './query-gpu.js';
import { sampleFromCells } from './rows.js';
import { smiRunner, streamSmi, type SmiRunner, type SmiStream } from './run.js';

/** How to run nvidia-smi. */
export interface NvidiaSmiOptions {
  /** The binary: a path, or a name looked up on PATH. */
  command: string;
  timeoutMs: number;
  /** Where the kernel's list of GPUs is read when one is lost (/proc/driver/nvidia/gpus). */
  host: Host;
}

/** A runner whose calls share one deadline: --timeout bounds the whole collection. */
function deadlineRunner(command: string, timeoutMs: number): SmiRunner {
  const deadline = Date.now() + timeoutMs;
  return (args) => smiRunner(command, { timeoutMs: Math.max(1, deadline - Date.now()) })(args);
}

/** One collection's reads through `run` (tests pass a runner that replays a capture). */
export function nvidiaSmiReads(run: SmiRunner, host: Host): SourceReads {
  return {
    gpus: (query) =>
      queryGpus({
        run,
        fields: query.fields,
        knownNames: query.knownNames,
        knownGpus: () => (query.knownGpus.length > 0 ? [...query.knownGpus] : kernelGpus(host)),
      }),
    processes: async () => {
      const outcome = await run(COMPUTE_APPS_ARGS);
      if (outcome.kind !== 'ok') return { kind: 'failed', failure: classifyFailure(outcome, 'nvidia-smi --query-compute-apps') };
      return { kind: 'ok', ...parseComputeApps(outcome.stdout) };
    },
  };
}

/** A `-lms` child's lines as rows of `fields`; its end as a failure. */
export function lmsRows(child: SmiStream, fields: readonly FieldSpec[]): RowStream {
  async function* rows() {
    for await (const line of child.lines) yield line.trim() === '' ? undefined : sampleFromCells(fields, splitCells(line), line);
  }
  return {
    what: 'nvidia-smi -lms',
    rows: rows(),
    stop: child.stop,
    ended: child.ended.then((outcome) =>
      outcome.kind === 'ok'
        ? { reason: 'nvidia_smi_failed', message: 'nvidia-smi -lms exited' }
        : classifyFailure(outcome, 'nvidia-smi -lms'),
    ),
  };
}

/** nvidia-smi as a source: --query-gpu and --query-compute-apps, and -lms for the daemon mode. */
export function nvidiaSmiSource(options: NvidiaSmiOptions): Source {
  return {
    reads: () => nvidiaSmiReads(deadlineRunner(options.command, options.timeoutMs), options.host),
    stream: (fields, names, intervalMs) =>
      lmsRows(
        streamSmi(options.command, [...queryGpuArgs(fields.map((field) => names[field.query]!)), '-lms', String(Math.round(intervalMs))]),
        fields,
      ),
  };
}
