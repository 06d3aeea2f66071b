import type { OptionSpec, OptionTable } from './option-types.js';
import { COLLECT_OPTIONS } from './options.js';

// install's and uninstall's options. install takes collect's own options over (and records them in
// /etc/default/gpu-textfile), so its table is derived from collect's rather than written twice.

const INSTALL = 'Install:';
const WRITTEN = 'Written to /etc/default/gpu-textfile for collect:';

/** One of collect's options as install takes it: no default, so that "not given" can be told apart. */
function passedOn<N extends PassedOn>(
  name: N,
  describe?: string,
): Omit<(typeof COLLECT_OPTIONS)[N], 'default' | 'group'> & { group: string } {
  const { default: _default, group: _group, ...spec }: OptionSpec = COLLECT_OPTIONS[name];
  return { ...spec, group: WRITTEN, ...(describe ? { describe } : {}) } as Omit<(typeof COLLECT_OPTIONS)[N], 'default' | 'group'> & {
    group: string;
  };
}

/** The collect options install writes into /etc/default/gpu-textfile (as GPU_TEXTFILE_*). */
export const PASSED_ON = [
  'textfile-dir',
  'file-name',
  'csv-dir',
  'task',
  'label',
  'exclude-fields',
  'slow-fields',
  'timeout',
  'processes',
  'max-processes',
  'interval',
  'source',
  'nvml-library',
  'gpm-window',
  'compat',
] as const;
type PassedOn = (typeof PASSED_ON)[number];
const PASSED = Object.fromEntries(PASSED_ON.map((name) => [name, passedOn(name)])) as { [N in PassedOn]: ReturnType<typeof passedOn<N>> };

/** install's options. */
export const INSTALL_OPTIONS = {
  root: {
    type: 'string',
    placeholder: 'DIR',
    group: INSTALL,
    default: '/',
    describe: 'Install under this directory instead of / (then nothing is enabled)',
  },
  daemon: {
    type: 'boolean',
    group: INSTALL,
    default: false,
    describe: 'Install the daemon service (daemon mode: collect --interval) instead of the 15 s timer (and remove the other)',
  },
  enable: {
    type: 'boolean',
    group: INSTALL,
    default: true,
    describe: 'systemctl daemon-reload and enable --now the timers (--no-enable to skip)',
  },
  'dry-run': { type: 'boolean', group: INSTALL, default: false, describe: 'Print what would be done; change nothing' },
  ...PASSED,
  'csv-dir': passedOn('csv-dir', 'Also keep the CSV trail here, archived daily (e.g. /var/log/gpu-textfile)'),
  interval: passedOn('interval', 'With --daemon: the cadence (default 15s; at least 100ms)'),
} as const satisfies OptionTable;

/** uninstall's options: it reads what install recorded in /etc/default/gpu-textfile. */
export const UNINSTALL_OPTIONS = {
  root: {
    type: 'string',
    placeholder: 'DIR',
    default: '/',
    describe: 'Uninstall from under this directory instead of / (then nothing is disabled)',
  },
  enable: { type: 'boolean', default: true, describe: 'systemctl disable --now the units and daemon-reload (--no-enable to skip)' },
  'dry-run': { type: 'boolean', default: false, describe: 'Print what would be done; change nothing' },
} as const satisfies OptionTable;
