import { INSTALL_OPTIONS, UNINSTALL_OPTIONS } from './commands/install-options.js';
import { ARCHIVE_OPTIONS, COLLECT_OPTIONS, DOCTOR_OPTIONS, EXPORT_OPTIONS, PULSE_OPTIONS, REPORT_OPTIONS } from './commands/options.js';
import type { ArgsOf, OptionTable } from './commands/option-types.js';
import { closestName, envValues, parseOptions, unknownOptions } from './commands/parse-options.js';
import { withDefaultsFile } from './commands/defaults-file.js';
import { RUN_OPTIONS } from './commands/run-options.js';
import type { HeadStart } from './sources/sources.js';

/** Reads a command's arguments by its option table: the fast parser or yargs. */
type Parse = <T extends OptionTable>(table: T) => Promise<ArgsOf<T>>;

/**
 * A command: its options, and how it starts once its arguments are parsed (its code is imported only
 * then). `operands` are the words after `--` (run's job), never parsed as options; `headStart` is
 * collect's nvidia-smi calls, begun by the launcher (src/launch/head-start.ts).
 */
interface Command {
  name: string;
  describe: string;
  options: OptionTable;
  start: (parse: Parse, operands: readonly string[], headStart?: HeadStart) => Promise<number>;
}

/** Ties a command's handler to its table: the handler takes exactly the arguments the table gives. */
function command<T extends OptionTable>(
  name: string,
  describe: string,
  options: T,
  load: () => Promise<(args: ArgsOf<T>) => Promise<number>>,
): Command {
  return {
    name,
    describe,
    options,
    start: async (parse) => {
      const args = await parse(options);
      return (await load())(args);
    },
  };
}

/** The package's version, set by the build (scripts/build.mjs). */
declare const PACKAGE_VERSION: string;

/** The commands. Each command's code is imported only when it runs. */
const COMMANDS: Command[] = [
  {
    name: 'collect',
    describe: 'Run nvidia-smi once and publish the metrics (and CSV rows)',
    options: COLLECT_OPTIONS,
    start: async (parse, _operands, headStart) => {
      const args = await parse(COLLECT_OPTIONS);
      return (await import('./commands/collect.js')).runCollect(args, undefined, headStart);
    },
  },
  command(
    'archive',
    'Rotate the CSV trail: copy each live CSV to a dated archive, then truncate it, losing no row',
    ARCHIVE_OPTIONS,
    async () => (await import('./commands/archive.js')).runArchive,
  ),
  command(
    'doctor',
    'Say why nvidia-smi fails and what to run: walks the checks an expert would',
    DOCTOR_OPTIONS,
    async () => (await import('./commands/doctor.js')).runDoctor,
  ),
  command(
    'report',
    'Answers from the CSV history: hourly or daily rows and findings (memory growth, idle or unbalanced GPUs, gaps, errors)',
    REPORT_OPTIONS,
    async () => (await import('./commands/report.js')).runReport,
  ),
  command(
    'export',
    'The CSV trail as timestamped samples (OpenMetrics or Prometheus text) for a store to import: fills a gap in Prometheus or VictoriaMetrics',
    EXPORT_OPTIONS,
    async () => (await import('./commands/export.js')).runExport,
  ),
  command(
    'pulse',
    'Sample one GPU fast for a few seconds and tell idle, saturated, data-starved, throttled and small-kernel work apart',
    PULSE_OPTIONS,
    async () => (await import('./commands/pulse.js')).runPulse,
  ),
  {
    name: 'run',
    describe:
      "Run a command, sample its GPUs until it exits, and summarize: utilization per step range, GPU-hours, energy, pulse's verdict",
    options: RUN_OPTIONS,
    start: async (parse, operands) => {
      const args = await parse(RUN_OPTIONS);
      return (await import('./commands/run.js')).runRun(args, operands);
    },
  },
  command(
    'install',
    'Install the systemd units and /etc/default/gpu-textfile, create the directories, enable the timers',
    INSTALL_OPTIONS,
    async () => (await import('./commands/install.js')).runInstall,
  ),
  command(
    'uninstall',
    'Disable and remove what install wrote, found from /etc/default/gpu-textfile (CSV and state data stay)',
    UNINSTALL_OPTIONS,
    async () => (await import('./commands/install.js')).runUninstall,
  ),
];

/** Bad usage: the message, a pointer to --help, exit status 2 (as for the commands' own checks). */
function usageError(message: string | undefined): never {
  process.stderr.write(`gpu-textfile: ${message ?? 'bad usage'} (see --help)\n`);
  process.exit(2);
}

/** The command whose name is closest to a mistyped one, if any is close. */
export const closestCommand = (typed: string): string | undefined =>
  closestName(
    typed,
    COMMANDS.map((c) => c.name),
  );

/** What every yargs parser here shares: strict, usage errors as above, -h as --help, help wrapped to the terminal. */
async function strictParser(args: readonly string[], scriptName: string, table?: OptionTable) {
  const { default: yargs } = await import('yargs');
  return yargs(args)
    .scriptName(scriptName)
    .strict()
    .fail((message, error) => {
      if (error) throw error;
      // yargs suggests commands only: the option meant, where one is close, as collect's own parser says it.
      const unknown = /^Unknown arguments?: (.*)$/.exec(message ?? '');
      usageError(unknown && table ? unknownOptions(unknown[1]!.split(', '), table) : message);
    })
    .help()
    .alias('help', 'h')
    .wrap(helpWidth());
}

/**
 * A command's arguments through yargs (help, and every command but a plain collect). The
 * GPU_TEXTFILE_* variables are read by the fast parser's own rules (lists split at commas and
 * spaces) and given to yargs as values the command line overrides; only this command's are read, so
 * one /etc/default/gpu-textfile serves every command, and process.env is left as it is.
 */
export async function parseWithYargs(name: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  const command = COMMANDS.find((c) => c.name === name)!;
  const fromEnv = envValues(command.options, env);
  if (typeof fromEnv === 'string') usageError(fromEnv);
  const { usageLine, afterOptions } = await import('./commands/help.js');
  const parser = (await strictParser(args, `gpu-textfile ${name}`, command.options))
    .usage(`${usageLine(name, command.options)}\n\n${command.describe}`)
    .options(command.options)
    .config(fromEnv)
    .version(false);
  if (args.some((arg) => arg === '--help' || arg === '-h')) {
    // The options as yargs lays them out, then the examples and the rest as help.ts does: yargs
    // wraps an example's command at the terminal's width, and a command cut in two cannot be pasted.
    process.stdout.write(`${await parser.getHelp()}\n\n${afterOptions(name, helpWidth())}\n`);
    process.exit(0);
  }
  return parser.parseAsync();
}

/** The width help is laid out to: the terminal's, at most 110 columns. */
const helpWidth = (): number => Math.min(110, process.stdout.columns || 110);

/** parseWithYargs for a command whose table is `table`: yargs parsed by that very table. */
const yargsArgs = async <T extends OptionTable>(
  name: string,
  // Only its type is used: it names the ArgsOf the result is.
  _table: T,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<ArgsOf<T>> => (await parseWithYargs(name, args, env)) as ArgsOf<T>;

/** Runs the command named by argv; resolves to its exit status. `headStart`: see Command. */
export async function main(argv: readonly string[], headStart?: HeadStart): Promise<number> {
  let args = argv;
  // `gpu-textfile help collect` is `gpu-textfile collect --help`.
  if (args[0] === 'help') return main(args[1] === undefined ? ['--help'] : [args[1], '--help']);
  const command = COMMANDS.find((c) => c.name === args[0]);
  // run's job comes after `--`: its words (a --help of its own) are the job's, never ours.
  const end = command?.name === 'run' ? args.indexOf('--') : -1;
  const operands = end >= 0 ? args.slice(end + 1) : [];
  if (end >= 0) args = args.slice(0, end);
  const wantsHelp = args.some((arg) => arg === '--help' || arg === '-h' || arg === '--version');
  // Defaults from /etc/default/gpu-textfile, under the environment; not for install and uninstall,
  // which write that file from their own options.
  const readsDefaults = command !== undefined && command.name !== 'install' && command.name !== 'uninstall';
  const env = readsDefaults ? withDefaultsFile(process.env, process.geteuid?.() ?? 0, command.name) : process.env;
  if (typeof env === 'string') usageError(env);

  if (command && command.name === 'collect' && !wantsHelp) {
    // The every-15-seconds path: the option table read without yargs, whose loading alone costs more
    // than a third of a one-shot run's own CPU time. Same table, same rules (a test compares them).
    return command.start(
      async (table) => {
        const parsed = parseOptions(table, args.slice(1), env);
        return typeof parsed === 'string' ? usageError(parsed) : parsed;
      },
      operands,
      headStart,
    );
  }
  if (command) return command.start((table) => yargsArgs(command.name, table, args.slice(1), env), operands);
  const first = args[0];
  if (first !== undefined && !first.startsWith('-') && first !== 'completion') {
    const near = closestCommand(first);
    usageError(`Unknown command: ${first}${near ? `. Did you mean ${near}?` : ''} Commands: ${COMMANDS.map((c) => c.name).join(', ')}`);
  }
  let cli = (await strictParser(args, 'gpu-textfile')).usage(
    'gpu-textfile COMMAND [OPTIONS]   (gpu-textfile help COMMAND, or COMMAND -h, for its options)',
  );
  // Each command with its options, for the shell completion (`--get-yargs-completions`); runs go through main above.
  for (const { name, describe, options } of COMMANDS) cli = cli.command(name, describe, (y) => y.options(options));
  await cli
    .completion('completion', "Print the shell completion script (bash, or zsh's when $SHELL is zsh): gpu-textfile completion >> ~/.bashrc")
    .demandCommand(1, `Name a command: ${COMMANDS.map((c) => c.name).join(', ')}`)
    .version(PACKAGE_VERSION)
    .parseAsync();
  return 0;
}
