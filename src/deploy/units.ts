/** Where the installed program is: what every ExecStart runs. */
export interface Program {
  node: string;
  script: string;
}

export interface InstallChoices {
  /** The long-running service instead of the 15 s timer. */
  daemon?: boolean;
  textfileDir: string;
  csvDir?: string;
  task?: string;
}

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

/** A unit from systemd/ with ExecStart pointing at this installation; timers are taken as they are. */
export function renderUnit(name: string, template: string, program: Program, choices: InstallChoices): string {
  if (!name.endsWith('.service')) return template;
  if (!TEMPLATE_EXEC.test(template)) throw new Error(`${name} has no ExecStart=<node> <gpu-textfile.js> line`);
  let unit = template.replace(TEMPLATE_EXEC, () => `ExecStart=${executable(program.node)} ${execArgument(program.script)} `);
  // The collector may write only the directories it was given. One word each, "-" (may be missing) inside it.
  const writable = [choices.textfileDir, ...(choices.csvDir ? [choices.csvDir] : [])].map((dir) => pathWord(`-${dir}`)).join(' ');
  unit = unit.replace(/^ReadWritePaths=.*$/m, () => `ReadWritePaths=${writable}`);
  return unit;
}

/** /etc/default/gpu-textfile: the chosen options as the variables every command reads. */
export function renderEnvironmentFile(choices: InstallChoices): string {
  const lines = [
    '# Options for gpu-textfile, written by `gpu-textfile install`. Every command option can be set here',
    '# as GPU_TEXTFILE_<OPTION> (upper case, - as _), e.g. GPU_TEXTFILE_EXCLUDE_FIELDS, GPU_TEXTFILE_LABEL.',
    `GPU_TEXTFILE_TEXTFILE_DIR=${envValue(choices.textfileDir)}`,
    ...(choices.csvDir ? [`GPU_TEXTFILE_CSV_DIR=${envValue(choices.csvDir)}`] : []),
    ...(choices.task ? [`GPU_TEXTFILE_TASK=${envValue(choices.task)}`] : []),
  ];
  return `${lines.join('\n')}\n`;
}

/** The units install writes: the timer pair or the daemon, and the archive pair only with a CSV trail. */
export const unitNames = (choices: InstallChoices): string[] => [
  ...(choices.daemon ? ['gpu-textfile-daemon.service'] : ['gpu-textfile.service', 'gpu-textfile.timer']),
  ...(choices.csvDir ? ['gpu-textfile-archive.service', 'gpu-textfile-archive.timer'] : []),
];

export const ALL_UNITS = ['gpu-textfile.service', 'gpu-textfile.timer', 'gpu-textfile-archive.service', 'gpu-textfile-archive.timer', 'gpu-textfile-daemon.service'];
