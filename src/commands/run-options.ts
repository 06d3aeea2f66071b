import { COLLECT_OPTIONS } from './options.js';
import type { OptionTable } from './option-types.js';

// run's options: its own, and the ones that say how the GPUs are read, taken from collect's table.

const CSV = 'CSV trail:';
const OUTPUT = 'Output:';

/** run's options (the job's command follows `--`). */
export const RUN_OPTIONS = {
  task: {
    type: 'string',
    placeholder: 'NAME',
    group: CSV,
    describe: "Task name: the CSV file name, its task_id column and the job's label [default: the command's name and start time]",
  },
  'csv-dir': {
    type: 'string',
    placeholder: 'DIR',
    group: CSV,
    describe: 'Append one row per GPU per sample, with step and marks, to <csv-dir>/<task>.csv',
  },
  interval: {
    type: 'string',
    placeholder: 'DURATION',
    default: '1s',
    describe: 'How often to sample the GPUs (at least 100ms; 200ms sees short stalls)',
  },
  mark: {
    type: 'string',
    placeholder: 'REGEX',
    describe:
      'Lines of the job\'s output that say its progress: the named group "step" is the step, other named groups are marks [default: step 120, step=120, global_step=120, [120/5000]; marks are the line\'s name=number pairs]',
  },
  'summary-json': { type: 'string', placeholder: 'FILE', describe: 'Also write the summary as JSON to FILE' },
  'textfile-dir': {
    type: 'string',
    placeholder: 'DIR',
    group: OUTPUT,
    describe: 'While the job runs, publish its GPUs and nvidia_gpu_job_info into this textfile directory (removed when it ends)',
  },
  'file-name': {
    type: 'string',
    placeholder: 'NAME',
    group: OUTPUT,
    describe: 'Name of that file [default: gpu-textfile-run-<task>.prom]',
  },
  source: COLLECT_OPTIONS.source,
  'nvml-library': COLLECT_OPTIONS['nvml-library'],
  'gpm-window': COLLECT_OPTIONS['gpm-window'],
  'demo-host': COLLECT_OPTIONS['demo-host'],
  'nvidia-smi': COLLECT_OPTIONS['nvidia-smi'],
  timeout: COLLECT_OPTIONS.timeout,
  'exclude-fields': COLLECT_OPTIONS['exclude-fields'],
  'slow-fields': COLLECT_OPTIONS['slow-fields'],
  'state-dir': { ...COLLECT_OPTIONS['state-dir'], describe: "Where collect remembers the driver's field names (read only)" },
  'host-root': COLLECT_OPTIONS['host-root'],
} as const satisfies OptionTable;
