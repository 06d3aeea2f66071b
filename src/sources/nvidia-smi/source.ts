import type { FieldSpec } from '../../fields/field-spec.js';
import type { Host } from '../../host/host.js';
import type { RowStream, Source, SourceReads } from '../source.js';
import { splitCells } from './cells.js';
import { COMPUTE_APPS_ARGS, parseComputeApps } from './compute-apps.js';
import { classifyFailure } from './failure.js';
import { kernelGpus, queryGpuArgs, queryGpus } from './query-gpu.js';
import { sampleFromCells } from './rows.js';
import { forgetRecords, type HeadStart, keepRecord } from './head-start.js';
import { guardPool } from './orphan-guard.js';
import { runSmi, streamSmi, type SmiRunner, type SmiStream } from './run.js';
import { cudaVersionOf, VERSION_ARGS } from './version.js';

/** How to run nvidia-smi. */
export interface NvidiaSmiOptions {
  /** The binary: a path, or a name looked up on PATH. */
  command: string;
  timeoutMs: number;
  /** Where the kernel's list of GPUs is read when one is lost (/proc/driver/nvidia/gpus). */
  host: Host;
  /** A one-shot's calls the launcher began (head-start.ts): taken over where they are the ones this run starts. */
  headStart?: HeadStart;
}

/**
 * A runner whose calls share one deadline (--timeout bounds the whole collection) and, while they run
 * at once, one guard; a call `headStart` began already is taken over instead of started again.
 */
function deadlineRunner(command: string, timeoutMs: number, headStart?: HeadStart): SmiRunner {
  const deadline = Date.now() + timeoutMs;
  const guards = guardPool();
  return (args) =>
    runSmi(command, args, { timeoutMs: Math.max(1, deadline - Date.now()), guards, takeOver: headStart?.take(command, args) });
}

/** The calls a collection started before any had ended, each with whether it was answered. */
interface FirstCalls {
  run: SmiRunner;
  calls: () => readonly { args: readonly string[]; ok?: boolean }[];
}

/** `runner`, noting its first calls: those the next start of the command line may begin (head-start.ts). */
function notingFirstCalls(runner: SmiRunner): FirstCalls {
  const first: { args: readonly string[]; ok?: boolean }[] = [];
  let anyEnded = false;
  return {
    run: async (args) => {
      const entry: { args: readonly string[]; ok?: boolean } | undefined = anyEnded ? undefined : { args };
      if (entry) first.push(entry);
      const outcome = await runner(args);
      anyEnded = true;
      if (entry) entry.ok = outcome.kind === 'ok';
      return outcome;
    },
    calls: () => first,
  };
}

/**
 * The end of a one-shot run with a head start: the calls not taken are killed; a run that succeeded
 * with every first call answered leaves their --query-* calls for the next start; an nvidia-smi stuck
 * in the driver (found by this run, or remembered from an earlier one) removes every record, so that
 * no start begins a call before the stuck check.
 */
function settleHeadStart(
  headStart: HeadStart,
  options: NvidiaSmiOptions,
  first: FirstCalls | undefined,
  end: { succeeded: boolean; stuck: boolean },
): void {
  headStart.drop();
  if (end.stuck) {
    forgetRecords(headStart.file);
    return;
  }
  const calls = first?.calls() ?? [];
  if (!end.succeeded || calls.length === 0 || !calls.every((call) => call.ok)) return;
  const queries = calls.map((call) => [...call.args]).filter((args) => args[0]?.startsWith('--query-'));
  // A record that cannot be written costs the next run its head start, nothing more.
  if (queries.length > 0) keepRecord(headStart.file, { command: options.command, calls: queries, timeoutMs: options.timeoutMs });
}

/** One collection's reads through `run` (tests pass a runner that replays a capture). */
export function nvidiaSmiReads(runner: SmiRunner, host: Host): SourceReads {
  // The nvidia-smi runs of this collection that SIGKILL did not end (stuck.ts): collect remembers them.
  const stuck: number[] = [];
  const run: SmiRunner = async (args) => {
    const outcome = await runner(args);
    if (outcome.kind === 'stuck') stuck.push(outcome.pid);
    return outcome;
  };
  return {
    stuck: () => stuck,
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
    cudaVersion: async () => cudaVersionOf(await run(VERSION_ARGS)),
  };
}

/**
 * nvidia-smi's `timestamp` cell, "2026/12/01 12:19:21.874" in its local time, as ms since the epoch:
 * when that query started. Undefined when it does not read as one.
 */
export function parseSmiTimestamp(cell: string | undefined): number | undefined {
  const match = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3})$/.exec(cell?.trim() ?? '');
  if (!match) return undefined;
  const [year, month, day, hour, minute, second, ms] = match.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return new Date(year, month - 1, day, hour, minute, second, ms).getTime();
}

/**
 * A `-lms` child's lines as rows of `fields`; its end as a failure. Each line starts with the
 * `timestamp` of its query (asked first, see nvidiaSmiSource), which becomes the sample's takenAt:
 * -lms keeps its period, so the query's time shows only there.
 */
export function lmsRows(child: SmiStream, fields: readonly FieldSpec[]): RowStream {
  async function* rows() {
    for await (const line of child.lines) {
      if (line.trim() === '') {
        yield undefined;
        continue;
      }
      const [timestamp, ...cells] = splitCells(line);
      const row = sampleFromCells(fields, cells, line);
      const takenAt = parseSmiTimestamp(timestamp);
      yield takenAt !== undefined && 'readings' in row ? { ...row, takenAt } : row;
    }
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
  // The last collection's: what its end keeps for the next start.
  let last: { first: FirstCalls; reads: SourceReads } | undefined;
  return {
    reads: () => {
      const first = notingFirstCalls(deadlineRunner(options.command, options.timeoutMs, options.headStart));
      const reads = nvidiaSmiReads(first.run, options.host);
      last = { first, reads };
      return reads;
    },
    settle: (end) => {
      if (!options.headStart) return;
      const stuck = end.stuck || (last?.reads.stuck?.() ?? []).length > 0;
      settleHeadStart(options.headStart, options, last?.first, { ...end, stuck });
    },
    stream: (fields, names, intervalMs) =>
      lmsRows(
        streamSmi(options.command, [
          ...queryGpuArgs(['timestamp', ...fields.map((field) => names[field.query]!)]),
          '-lms',
          String(Math.round(intervalMs)),
        ]),
        fields,
      ),
  };
}
