import { basename } from 'node:path';
import type { CollectPlan } from '../collect/plan.js';
import { COMPAT_NAMES, compatFileName } from '../compat/compat-file.js';
import { parseDuration } from './duration.js';
import { FIELDS } from '../fields/fields.js';
import { selectFields } from '../fields/field-select.js';
import { hostAt } from '../host/host.js';
import { DEMO_LABEL } from '../metrics/metrics-catalog.js';
import { DEFAULT_MARK, parseMarkRegex } from '../run/marks.js';
import type { RunIo, RunPlan } from '../run/plan.js';
import { TASK_NAME_MAX_LENGTH, taskNameProblem } from './task-name.js';
import { parseSourceArgs } from './collect.js';
import type { ArgsOf } from './option-types.js';
import { COLLECT_OPTIONS } from './options.js';
import { missingTextfileDir } from '../publish/textfile.js';
import type { RUN_OPTIONS } from './run-options.js';

export type RunArgs = ArgsOf<typeof RUN_OPTIONS>;

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * The task a run is named by without --task: the command's name and the local start time,
 * `train.py-20261201T134500`, cut to what a task name may hold. The `T` keeps it from ending like
 * an archive's `-YYYYMMDD`.
 */
export function defaultTask(command: string, startedAt: Date): string {
  const name = basename(command)
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[^A-Za-z0-9]+/, '');
  const d = startedAt;
  const time = `${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}T${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}`;
  return `${(name || 'job').slice(0, TASK_NAME_MAX_LENGTH - time.length - 1)}-${time}`;
}

/** The options and the job's argv -> one complete plan, or the one line that says what is wrong (exit 2). */
export function parseRunArgs(args: RunArgs, command: readonly string[], env: NodeJS.ProcessEnv, startedAt: number): RunPlan | string {
  if (command.length === 0 || command[0] === '') return 'name the command to run after --: gpu-textfile run [OPTIONS] -- CMD [ARGS…]';
  const intervalMs = parseDuration(args.interval);
  if (intervalMs === undefined || intervalMs < 100) return `--interval: "${args.interval}" must be a duration of at least 100ms`;
  const timeoutMs = parseDuration(args.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) return `--timeout: "${args.timeout}" is not a duration (use 10, 10s or 500ms)`;
  const mark = parseMarkRegex(args.mark ?? DEFAULT_MARK);
  if (typeof mark === 'string') return mark;
  const task = args.task ?? defaultTask(command[0]!, new Date(startedAt));
  const taskProblem = taskNameProblem(task);
  if (taskProblem) return taskProblem;
  const fileName = args.fileName ?? `gpu-textfile-run-${task}.prom`;
  if (!fileName.endsWith('.prom') || fileName.includes('/'))
    return `--file-name: "${fileName}" must be a plain name ending in .prom (node_exporter reads only those)`;
  // collect's file: run would hold its lock for the whole job (collect's timer then publishes nothing),
  // and delete it at the end. Another collector's custom name is refused when its lock is found held.
  // Its --compat files too (nvidia_gpu_dcgm.prom): collect would overwrite the job's file each run.
  const collectFile = COLLECT_OPTIONS['file-name'].default;
  if (fileName === collectFile)
    return `--file-name: ${fileName} is collect's file; a job's textfile needs a name of its own (the default is gpu-textfile-run-<task>.prom)`;
  if (COMPAT_NAMES.some((name) => compatFileName(collectFile, name) === fileName))
    return `--file-name: ${fileName} is one of collect's files (its --compat file); a job's textfile needs a name of its own (the default is gpu-textfile-run-<task>.prom)`;
  const source = parseSourceArgs(args);
  if (typeof source === 'string') return source;
  const host = hostAt(args.hostRoot);
  const collect: CollectPlan = {
    ...source,
    nvidiaSmi: args.nvidiaSmi,
    timeoutMs,
    host,
    fields: selectFields(FIELDS, args.excludeFields, args.slowFields),
    processes: true,
    textfileDir: args.textfileDir ?? '',
    fileName,
    dryRun: false,
    // The job's series carry its task: they never collide with collect's own file in the same directory.
    labels: source.source === 'demo' ? [DEMO_LABEL, ['task', task]] : [['task', task]],
    stateDir: args.stateDir,
    processesIntervalMs: 5000,
  };
  return {
    command: [...command],
    task,
    intervalMs,
    mark,
    csvDir: args.csvDir,
    summaryJson: args.summaryJson,
    textfileDir: args.textfileDir,
    fileName,
    collect,
    env: { ...env, PYTHONUNBUFFERED: env.PYTHONUNBUFFERED ?? '1' },
    startedAt,
  };
}

/** `gpu-textfile run [OPTIONS] -- CMD [ARGS…]`. Returns the job's exit status (2: bad options, 127: CMD cannot run). */
export async function runRun(
  args: RunArgs,
  command: readonly string[],
  io: RunIo = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  const parsed = parseRunArgs(args, command, process.env, Date.now());
  // Before the job starts: a mistyped directory would be a job's whole textfile written where nothing reads.
  const plan = typeof parsed === 'string' || !parsed.textfileDir ? parsed : (missingTextfileDir(parsed.textfileDir) ?? parsed);
  if (typeof plan === 'string') {
    io.stderr.write(`gpu-textfile: ${plan}\n`);
    return 2;
  }
  const { runJob } = await import('../run/run.js');
  return runJob(plan, io);
}
