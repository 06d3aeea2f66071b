import { existsSync } from 'node:fs';
import type { Argv } from 'yargs';

/** Debian/Ubuntu's prometheus-node-exporter package reads this directory. */
export const DEBIAN_TEXTFILE_DIR = '/var/lib/prometheus/node-exporter';
/** Where upstream's docs and most hand installs put it. */
export const UPSTREAM_TEXTFILE_DIR = '/var/lib/node_exporter/textfile';

export const defaultTextfileDir = (): string => (existsSync(DEBIAN_TEXTFILE_DIR) ? DEBIAN_TEXTFILE_DIR : UPSTREAM_TEXTFILE_DIR);

// Every command's options, declared here so the CLI can list them without loading any command's code.
// Each can also come from GPU_TEXTFILE_<OPTION> (e.g. GPU_TEXTFILE_TEXTFILE_DIR).

/** collect's options. */
export const collectOptions = <T>(yargs: Argv<T>) =>
  yargs
    .option('textfile-dir', { type: 'string', describe: `node_exporter's textfile directory [default: ${DEBIAN_TEXTFILE_DIR} if it exists, else ${UPSTREAM_TEXTFILE_DIR}]` })
    .option('file-name', { type: 'string', default: 'nvidia_gpu.prom', describe: 'Name of the file written there (must end in .prom)' })
    .option('dry-run', { type: 'boolean', default: false, describe: 'Print the exposition to stdout; write nothing anywhere' })
    .option('nvidia-smi', { type: 'string', default: 'nvidia-smi', describe: 'nvidia-smi to run (a path, or a name looked up on PATH)' })
    .option('timeout', { type: 'string', default: '10s', describe: 'Deadline for all nvidia-smi calls of one collection: seconds, or with a unit (500ms, 10s)' })
    .option('processes', { type: 'boolean', default: true, describe: 'Query compute processes (--no-processes to skip)' })
    .option('max-processes', { type: 'number', describe: 'Keep only the N processes using the most memory' })
    .option('label', { type: 'string', array: true, default: [] as string[], describe: 'Constant label key=value on every series (repeatable)' })
    .option('exclude-fields', { type: 'string', array: true, default: [] as string[], describe: 'Leave out fields whose nvidia-smi name or metric matches this glob (repeatable)' })
    .option('state-dir', { type: 'string', default: '/var/lib/gpu-textfile', describe: "Where the driver's accepted field names are remembered (optional: works without)" })
    .option('csv-dir', { type: 'string', describe: 'Also append one row per GPU to <csv-dir>/<task>.csv' })
    .option('task', { type: 'string', default: 'default', describe: 'Task name: the CSV file name and its task_id column' })
    .option('interval', { type: 'string', describe: 'Run on: keep one nvidia-smi -lms child and publish every sample (e.g. 15s, 250ms; at least 100ms)' })
    .option('processes-interval', { type: 'string', default: '60s', describe: 'With --interval: how often to query compute processes' });

/** archive's options. */
export const archiveOptions = <T>(yargs: Argv<T>) =>
  yargs
    .option('csv-dir', { type: 'string', demandOption: true, describe: 'Directory holding the live <task>.csv files' })
    .option('keep', { type: 'number', default: 14, describe: 'Archives kept per task' })
    .option('max-age', { type: 'number', describe: 'Remove archives whose data starts more than this many days ago' })
    .option('compress', { type: 'boolean', default: true, describe: 'gzip archives (--no-compress to keep them plain)' })
    .option('delay-compress', { type: 'boolean', default: false, describe: 'Leave the newest archive plain until the next run' })
    .option('min-size', { type: 'number', default: 0, describe: 'Leave live files smaller than this many bytes alone' });

/** install's and uninstall's options. */
export const installOptions = <T>(yargs: Argv<T>) =>
  yargs
    .option('root', { type: 'string', default: '/', describe: 'Install under this directory instead of / (then nothing is enabled)' })
    .option('daemon', { type: 'boolean', default: false, describe: 'Install the long-running service (collect --interval) instead of the 15 s timer' })
    .option('enable', { type: 'boolean', default: true, describe: 'systemctl daemon-reload and enable --now the timers (--no-enable to skip)' })
    .option('dry-run', { type: 'boolean', default: false, describe: 'Print what would be done; change nothing' })
    .option('textfile-dir', { type: 'string', describe: `Textfile directory [default: ${DEBIAN_TEXTFILE_DIR} if it exists, else ${UPSTREAM_TEXTFILE_DIR}]` })
    .option('csv-dir', { type: 'string', describe: 'Also keep the CSV trail here, archived daily (e.g. /var/log/gpu-textfile)' })
    .option('task', { type: 'string', describe: 'Task name for the CSV trail' });

/** doctor's options. */
export const doctorOptions = <T>(yargs: Argv<T>) =>
  yargs
    .option('json', { type: 'boolean', default: false, describe: 'Print { verdict, checks: [{ id, status, summary, evidence, fix }] }' })
    .option('root', { type: 'string', default: '/', describe: 'Read every system path under this directory (a test tree, a mounted disk image)' })
    .option('nvidia-smi', { type: 'string', default: 'nvidia-smi', describe: 'nvidia-smi to run' })
    .option('timeout', { type: 'string', default: '10s', describe: 'Deadline for nvidia-smi' })
    .option('only', { type: 'string', array: true, default: [] as string[], describe: 'Run only these checks (e.g. kernel-module); repeatable' });
