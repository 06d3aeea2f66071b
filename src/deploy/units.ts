import { dirname } from 'node:path';

/** Where the installed program is: what every ExecStart runs. */
export interface Program {
  node: string;
  script: string;
}

export interface InstallChoices {
  /** The daemon service (daemon mode, collect --interval) instead of the 15 s timer. */
  daemon?: boolean;
  textfileDir: string;
  csvDir?: string;
  task?: string;
  /** Collect's other options for /etc/default/gpu-textfile, by option name (file-name, label, slow-fields, …). */
  collect?: Readonly<Record<string, EnvSetting>>;
}

/** One option's value as the environment file holds it; a list is written as items separated by spaces. */
export type EnvSetting = string | number | boolean | readonly string[];

const TEMPLATE_EXEC = /^ExecStart=\S+ \S+gpu-textfile\.js /m;

// Quoting by each consumer's own rules (systemd.syntax(7), systemd.service(7) "Command lines",
// systemd.exec(7)); install refuses control characters before any of these is reached.
const PLAIN = /^[\w@+=:,./-]+$/;
const quoted = (text: string) => `"${text.replace(/(["\\])/g, '\\$1')}"`;
/** A path in ReadWritePaths= and the like: double quotes with \" and \\, and %% for a literal % (specifiers). */
const pathWord = (text: string) => (PLAIN.test(text) ? text : quoted(text).replace(/%/g, '%%'));
/** An ExecStart= argument: as a path, and $$ for a literal $ (systemd substitutes $VAR in arguments). */
const execArgument = (text: string) => (PLAIN.test(text) ? text : quoted(text).replace(/%/g, '%%').replace(/\$/g, '$$$$'));
/** The executable of ExecStart=: systemd takes no ", ' or \ there at all, and substitutes no $VAR. */
function executable(path: string): string {
  if (/["'\\]/.test(path)) throw new Error(`systemd cannot run ${JSON.stringify(path)}: a quote or backslash in an executable's path`);
  return pathWord(path);
}
/** A value in /etc/default/gpu-textfile, read by systemd (EnvironmentFile=) and by sh (the cron.d file): both
 * take double quotes with \ before " \ ` $. */
const envValue = (text: string) => (PLAIN.test(text) ? text : `"${text.replace(/(["\\$`])/g, '\\$1')}"`);

/**
 * The guide every unit names, installed with the program: docs/ beside dist/. Not a man: page, which
 * `systemd-analyze verify` looks up and fails on where it is absent (as nvidia-smi(1) is without
 * NVIDIA's man pages); and not /usr/share/doc, which minimal images leave out (dpkg path-exclude).
 */
export const documentation = (program: Program): string => `file:${dirname(dirname(program.script))}/docs/deployment.md`;

/** A unit from systemd/ with ExecStart and Documentation= pointing at this installation; timers otherwise as they are. */
export function renderUnit(name: string, template: string, program: Program, choices: InstallChoices): string {
  const documented = template.replace(/^Documentation=.*$/m, () => `Documentation=${pathWord(documentation(program))}`);
  if (!name.endsWith('.service')) return documented;
  if (!TEMPLATE_EXEC.test(documented)) throw new Error(`${name} has no ExecStart=<node> <gpu-textfile.js> line`);
  let unit = documented.replace(TEMPLATE_EXEC, () => `ExecStart=${executable(program.node)} ${execArgument(program.script)} `);
  // Each service may write only the directories it was given (the archiver: the CSV trail alone). One
  // word each, "-" (may be missing) inside it.
  const dirs = name === 'gpu-textfile-archive.service' ? [choices.csvDir] : [choices.textfileDir, choices.csvDir];
  const writable = dirs.flatMap((dir) => (dir ? [pathWord(`-${dir}`)] : [])).join(' ');
  unit = unit.replace(/^ReadWritePaths=.*$/m, () => `ReadWritePaths=${writable}`);
  return unit;
}

const envLine = (name: string, value: EnvSetting) =>
  `GPU_TEXTFILE_${name.replace(/-/g, '_').toUpperCase()}=${envValue(Array.isArray(value) ? value.join(' ') : String(value))}`;

/** /etc/default/gpu-textfile: the chosen options as the variables every command reads. */
export function renderEnvironmentFile(choices: InstallChoices): string {
  const lines = [
    // Said of the file, not of who wrote it: the packages ship this same text, and no install ran there.
    '# Options for gpu-textfile, read by its systemd units and by every command run by hand. Every command',
    '# option can be set here as GPU_TEXTFILE_<OPTION> (upper case, - as _), e.g. GPU_TEXTFILE_EXCLUDE_FIELDS.',
    '# A repeatable option takes a list: items separated by commas or spaces, GPU_TEXTFILE_LABEL="env=prod site=x".',
    ...(choices.task ? [] : ["# GPU_TEXTFILE_TASK names the CSV trail's <task>.csv; unset, the units use this host's short name."]),
    envLine('textfile-dir', choices.textfileDir),
    ...(choices.csvDir ? [envLine('csv-dir', choices.csvDir)] : []),
    ...(choices.task ? [envLine('task', choices.task)] : []),
    ...Object.entries(choices.collect ?? {}).map(([name, value]) => envLine(name, value)),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The variables an environment file sets, as sh reads what renderEnvironmentFile writes (and plain
 * hand edits): NAME=value, NAME="value" with \ before " \ ` $, NAME='value'; an optional `export`.
 * Comments and lines in any other form are passed over: they set nothing install relies on.
 */
export function parseEnvironmentFile(text: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\s*(?:export\s+)?([A-Za-z_]\w*)=(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s"'`$\\;&|<>()]*))\s*$/.exec(line);
    if (!match) continue;
    const [, name, doubled, single, plain] = match;
    values.set(name!, doubled !== undefined ? doubled.replace(/\\(["\\$`])/g, '$1') : (single ?? plain ?? ''));
  }
  return values;
}

/** The units install writes: the timer pair or the daemon, and the archive pair only with a CSV trail. */
export const unitNames = (choices: InstallChoices): string[] => [
  ...(choices.daemon ? ['gpu-textfile-daemon.service'] : ['gpu-textfile.service', 'gpu-textfile.timer']),
  ...(choices.csvDir ? ['gpu-textfile-archive.service', 'gpu-textfile-archive.timer'] : []),
];

export const ALL_UNITS = [
  'gpu-textfile.service',
  'gpu-textfile.timer',
  'gpu-textfile-archive.service',
  'gpu-textfile-archive.timer',
  'gpu-textfile-daemon.service',
];
