import { existsSync } from 'node:fs';
import { DOCTOR_CHECKS } from '../doctor/check-ids.js';
import type { OptionTable } from './option-types.js';

// What an option table is (ArgsOf, OptionSpec) lives beside the tables, in option-types.ts.

/** Debian/Ubuntu's prometheus-node-exporter package reads this directory. */
export const DEBIAN_TEXTFILE_DIR = '/var/lib/prometheus/node-exporter';
/** Where upstream's docs and most hand installs put it. */
export const UPSTREAM_TEXTFILE_DIR = '/var/lib/node_exporter/textfile';

export const defaultTextfileDir = (): string => (existsSync(DEBIAN_TEXTFILE_DIR) ? DEBIAN_TEXTFILE_DIR : UPSTREAM_TEXTFILE_DIR);

// Every command's options, as data: yargs reads them for help and parsing, and collect's hot path reads
// the same table with a small parser (src/commands/parse-options.ts) so a timer run need not load yargs.
// Each option can also come from GPU_TEXTFILE_<OPTION> (e.g. GPU_TEXTFILE_TEXTFILE_DIR). install's and
// uninstall's tables, derived from collect's, are in src/commands/install-options.ts.

const OUTPUT = 'Output:';
const SMI = 'nvidia-smi:';
const CSV = 'CSV trail:';
const LONG = 'Daemon mode:';
const HOST = 'Host:';
const STORE = 'Time-series store:';
const PULSE_SOURCE = 'Source:';
const PULSE_SAMPLING = 'Sampling:';

/** collect's options. */
export const COLLECT_OPTIONS = {
  'textfile-dir': {
    type: 'string',
    placeholder: 'DIR',
    group: OUTPUT,
    describe: `node_exporter's textfile directory [default: ${DEBIAN_TEXTFILE_DIR} if it exists, else ${UPSTREAM_TEXTFILE_DIR}]`,
  },
  'file-name': {
    type: 'string',
    placeholder: 'NAME',
    group: OUTPUT,
    default: 'nvidia_gpu.prom',
    describe: 'Name of the file written there (must end in .prom)',
  },
  compat: {
    type: 'string',
    placeholder: 'dcgm,nvidia_gpu_exporter',
    group: OUTPUT,
    describe:
      "Also write the same sample in a peer exporter's names, units and labels, each in a file of its own: dcgm (dcgm-exporter's up to 4.8.2, <file-name>_dcgm.prom), dcgm-4.8.3, dcgm-4.9 or dcgm-4.10 (its later generations, <file-name>_dcgm-4.9.prom), nvidia_gpu_exporter (utkuozdemir/nvidia_gpu_exporter's, <file-name>_nvidia_gpu_exporter.prom), or several as a comma list (docs/compat.md)",
  },
  'dry-run': {
    type: 'boolean',
    group: OUTPUT,
    default: false,
    describe: "Print the exposition to stdout (with --compat each file's, under '# ==> FILE <=='); write nothing anywhere",
  },
  'nvidia-smi': {
    type: 'string',
    placeholder: 'PATH',
    group: SMI,
    default: 'nvidia-smi',
    describe: 'nvidia-smi to run (a path, or a name looked up on PATH)',
  },
  source: {
    type: 'string',
    placeholder: 'nvidia-smi|nvml|demo',
    group: SMI,
    default: 'nvidia-smi',
    describe:
      'Where the data comes from: nvidia-smi; nvml (the NVIDIA library called in-process: cheaper, and more metrics); or demo (recordings replayed, every series labelled source="demo"; no GPU needed)',
  },
  'nvml-library': {
    type: 'string',
    placeholder: 'PATH',
    group: SMI,
    default: 'libnvidia-ml.so.1',
    describe: 'With --source nvml: the NVML library to load (a path, or a name the dynamic loader looks up)',
  },
  'gpm-window': {
    type: 'string',
    placeholder: 'DURATION',
    group: SMI,
    default: '100ms',
    describe:
      'With --source nvml: GPM activity (SM, tensor, DRAM) is measured between two samples this far apart in a one-shot run (the daemon mode compares with its previous sample); 10ms to 5s',
  },
  'demo-host': {
    type: 'string',
    placeholder: 'h200x2-load|h200x2-idle|h200',
    group: SMI,
    default: 'h200x2-load',
    describe: 'With --source demo: the recorded host replayed (two H200s under load or idle, or one H200)',
  },
  timeout: {
    type: 'string',
    placeholder: 'DURATION',
    group: SMI,
    default: '10s',
    describe: 'Deadline for all nvidia-smi calls of one collection: seconds, or with a unit (500ms, 10s)',
  },
  processes: { type: 'boolean', group: SMI, default: true, describe: 'Query compute processes (--no-processes to skip)' },
  'max-processes': { type: 'number', placeholder: 'N', group: SMI, describe: 'Keep only the N processes using the most memory' },
  label: {
    type: 'string',
    array: true,
    placeholder: 'KEY=VALUE',
    group: OUTPUT,
    default: [],
    describe: 'Constant label key=value on every series (repeatable)',
  },
  'exclude-fields': {
    type: 'string',
    array: true,
    placeholder: 'GLOB',
    group: SMI,
    default: [],
    describe: 'Leave out fields whose nvidia-smi name or metric matches this glob (repeatable)',
  },
  'slow-fields': {
    type: 'boolean',
    group: SMI,
    default: false,
    describe:
      'Also query the fields that make each call noticeably slower (the clock event reason time counters; PCIe throughput with --source nvml)',
  },
  'state-dir': {
    type: 'string',
    placeholder: 'DIR',
    group: OUTPUT,
    default: '/var/lib/gpu-textfile',
    describe: "Where the driver's accepted field names, its CUDA version and the Xid counts are remembered (optional: works without)",
  },
  'host-root': {
    type: 'string',
    placeholder: 'DIR',
    group: HOST,
    default: '/',
    describe: "The host's root directory, where its /proc and /etc/passwd are read (e.g. /host in a container)",
  },
  'csv-dir': { type: 'string', placeholder: 'DIR', group: CSV, describe: 'Also append one row per GPU to <csv-dir>/<task>.csv' },
  task: {
    type: 'string',
    placeholder: 'NAME',
    group: CSV,
    default: 'default',
    describe: 'Task name: the CSV file name and its task_id column',
  },
  interval: {
    type: 'string',
    placeholder: 'DURATION',
    group: LONG,
    describe: 'Run on: keep one nvidia-smi -lms child and publish every sample (e.g. 15s, 250ms; at least 100ms)',
  },
  'processes-interval': {
    type: 'string',
    placeholder: 'DURATION',
    group: LONG,
    default: '60s',
    describe: 'With --interval: how often to query compute processes',
  },
} as const satisfies OptionTable;

/** archive's options. */
export const ARCHIVE_OPTIONS = {
  'csv-dir': { type: 'string', placeholder: 'DIR', demandOption: true, describe: 'Directory holding the live <task>.csv files' },
  keep: { type: 'number', placeholder: 'N', default: 14, describe: 'Archives kept per task' },
  'max-age': {
    type: 'string',
    placeholder: 'AGE',
    describe: 'Remove archives rotated longer ago than this: days (7), or a span as --since takes (7d, 36h); no row younger is removed',
  },
  compress: { type: 'boolean', default: true, describe: 'gzip archives (--no-compress to keep them plain)' },
  'delay-compress': { type: 'boolean', default: false, describe: 'Leave the newest archive plain until the next run' },
  'min-size': { type: 'number', placeholder: 'BYTES', default: 0, describe: 'Leave live files smaller than this many bytes alone' },
} as const satisfies OptionTable;

/** doctor's options. */
export const DOCTOR_OPTIONS = {
  json: { type: 'boolean', default: false, describe: 'Print { verdict, checks: [{ id, status, summary, evidence, fix }] }' },
  'host-root': {
    type: 'string',
    placeholder: 'DIR',
    alias: 'root',
    default: '/',
    describe: 'Read every system path under this directory (a test tree, a mounted disk image, /host in a container)',
  },
  'nvidia-smi': { type: 'string', placeholder: 'PATH', default: 'nvidia-smi', describe: 'nvidia-smi to run' },
  timeout: {
    type: 'string',
    placeholder: 'DURATION',
    default: '10s',
    describe: 'Deadline for the whole diagnosis: file reads and nvidia-smi; checks not finished by then are marked so',
  },
  only: {
    type: 'string',
    array: true,
    placeholder: 'CHECK',
    default: [],
    describe: `Run only these checks (repeatable): ${DOCTOR_CHECKS.join(', ')}`,
  },
} as const satisfies OptionTable;

/** pulse's options. */
export const PULSE_OPTIONS = {
  gpu: { type: 'string', placeholder: 'INDEX', default: '0', group: PULSE_SAMPLING, describe: 'GPU index (or UUID) to look at' },
  seconds: { type: 'number', placeholder: 'N', default: 15, group: PULSE_SAMPLING, describe: 'How long to sample' },
  interval: {
    type: 'string',
    placeholder: 'DURATION',
    default: '200ms',
    group: PULSE_SAMPLING,
    describe: 'Sampling interval: faster sees shorter stalls (100ms to 500ms)',
  },
  from: {
    type: 'string',
    placeholder: 'FILE',
    group: PULSE_SAMPLING,
    describe: 'Read a recording (nvidia-smi --query-gpu=timestamp,index,utilization.gpu,… --format=csv -lms N) instead',
  },
  json: { type: 'boolean', default: false, describe: 'Print the verdict, evidence and next steps as JSON' },
  // What to sample, then where the samples come from: a group each, as collect's options are.
  source: {
    type: 'string',
    placeholder: 'nvidia-smi|nvml|demo',
    default: 'nvidia-smi',
    group: PULSE_SOURCE,
    describe:
      "nvml: sample through the NVIDIA library (in a reader process, under --timeout), with GPM's SM and tensor activity where the GPU has it; demo: replay a recorded H200 series for --seconds instead of sampling a GPU",
  },
  'nvidia-smi': { type: 'string', placeholder: 'PATH', default: 'nvidia-smi', group: PULSE_SOURCE, describe: 'nvidia-smi to run' },
  'nvml-library': { ...COLLECT_OPTIONS['nvml-library'], group: PULSE_SOURCE },
  timeout: {
    ...COLLECT_OPTIONS.timeout,
    group: PULSE_SOURCE,
    describe: "With --source nvml: how long one sample's NVML calls may take (500ms, 10s)",
  },
} as const satisfies OptionTable;

/** report's options. */
export const REPORT_OPTIONS = {
  'csv-dir': {
    type: 'string',
    array: true,
    placeholder: 'DIR',
    describe:
      "Directory of the CSV trail (live files and their archives, plain or gzipped), or of hosts' trails (DIR/<host>/); give it again for more; required unless --demo",
  },
  demo: {
    type: 'boolean',
    default: false,
    describe: 'Report on a generated week of a 4-GPU host with a finding of every kind (written to a new temp directory, named on stderr)',
  },
  task: { type: 'string', placeholder: 'NAME', describe: 'Only this task' },
  host: { type: 'string', placeholder: 'HOST', describe: 'Only this host' },
  since: {
    type: 'string',
    placeholder: 'WHEN',
    describe: 'From this time (2026-11-28T06:00:00+01:00, 2026-11-28) or span back from now (24h, 7d)',
  },
  until: { type: 'string', placeholder: 'WHEN', describe: 'Until this time (exclusive), same forms' },
  by: {
    type: 'string',
    placeholder: 'hour|day|task|gpu|job|host',
    describe:
      "Rows per hour (the default) or per day (in this machine's time zone), or the summary per host x task (task), per GPU (gpu), per job holding GPUs (job) or per host (host); a table on a terminal lists the hourly rows only when --by asks",
  },
  format: {
    type: 'string',
    placeholder: 'FORMAT',
    default: 'table',
    describe: 'table, csv, json or html (one self-contained page with charts)',
  },
  out: { type: 'string', placeholder: 'FILE', describe: 'Write to this file instead of stdout' },
  prometheus: {
    type: 'string',
    placeholder: 'URL',
    group: STORE,
    describe:
      "Report from a store speaking Prometheus's HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics) instead of a CSV trail; --since defaults to 7d",
  },
  'host-label': { type: 'string', placeholder: 'NAME', group: STORE, default: 'instance', describe: 'The label that names a host' },
  'prometheus-header': {
    type: 'string',
    array: true,
    placeholder: "'NAME: VALUE'",
    group: STORE,
    describe: "A header sent with every request (Mimir's 'X-Scope-OrgID: team-a'); give it again for more",
  },
  'prometheus-bearer-token-file': {
    type: 'string',
    placeholder: 'FILE',
    group: STORE,
    describe: 'Send the token in FILE as a bearer token (or set GPU_TEXTFILE_PROMETHEUS_BEARER_TOKEN)',
  },
  'prometheus-basic-auth-file': {
    type: 'string',
    placeholder: 'FILE',
    group: STORE,
    describe: 'Send basic auth from FILE, one line user:password (or set GPU_TEXTFILE_PROMETHEUS_BASIC_AUTH)',
  },
  'prometheus-ca-file': {
    type: 'string',
    placeholder: 'FILE',
    group: STORE,
    describe: "Trust the PEM certificates in FILE for the store's TLS",
  },
  'prometheus-timeout': {
    type: 'string',
    placeholder: 'DURATION',
    group: STORE,
    default: '30s',
    describe: 'How long one request may take',
  },
  'prometheus-concurrency': { type: 'number', placeholder: 'N', group: STORE, default: 4, describe: 'Requests in flight at once' },
} as const satisfies OptionTable;

/** export's options. */
export const EXPORT_OPTIONS = {
  'csv-dir': {
    type: 'string',
    array: true,
    placeholder: 'DIR',
    demandOption: true,
    describe:
      "Directory of the CSV trail (live files and their archives, plain or gzipped), or of hosts' trails (DIR/<host>/); give it again for more",
  },
  task: REPORT_OPTIONS.task,
  host: REPORT_OPTIONS.host,
  since: REPORT_OPTIONS.since,
  until: { type: 'string', placeholder: 'WHEN', describe: 'Until this time (exclusive), same forms [default: now]' },
  format: {
    type: 'string',
    placeholder: 'openmetrics|prometheus',
    default: 'openmetrics',
    describe:
      'openmetrics (timestamps in seconds, ends in # EOF: promtool tsdb create-blocks-from openmetrics) or prometheus (milliseconds: VictoriaMetrics /api/v1/import/prometheus)',
  },
  'host-label': {
    type: 'string',
    placeholder: 'NAME',
    default: 'instance',
    describe: "The label that carries the row's host (as your scrape config sets it: instance, or a host label of your own)",
  },
  label: { ...COLLECT_OPTIONS.label, describe: 'Constant label key=value on every series, as the scrape adds it (job=node; repeatable)' },
  out: { type: 'string', placeholder: 'FILE', describe: 'Write to this file (whole or not at all) instead of stdout' },
} as const satisfies OptionTable;
