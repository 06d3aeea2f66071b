import { ARCHIVE_OPTIONS, COLLECT_OPTIONS, DOCTOR_OPTIONS, INSTALL_OPTIONS, PULSE_OPTIONS, REPORT_OPTIONS, type OptionTable } from './commands/options.js';
import { envName, parseOptions } from './commands/parse-options.js';

type Run = (argv: never) => Promise<number>;

/** The package's version, set by the build (scripts/build.mjs). */
declare const PACKAGE_VERSION: string;

/** The commands. Each command's code is imported only when it runs. */
const COMMANDS: { name: string; describe: string; options: OptionTable; run: () => Promise<Run> }[] = [
  {
    name: 'collect',
    describe: 'Run nvidia-smi once and publish the metrics (and CSV rows)',
    options: COLLECT_OPTIONS,
    run: async () => (await import('./commands/collect.js')).runCollect,
  },
  {
    name: 'archive',
    describe: 'Rotate the CSV trail: copy each live CSV to a dated archive, then truncate it, losing no row',
    options: ARCHIVE_OPTIONS,
    run: async () => (await import('./commands/archive.js')).runArchive,
  },
  {
    name: 'doctor',
    describe: 'Say why nvidia-smi fails and what to run: walks the checks an expert would',
    options: DOCTOR_OPTIONS,
    run: async () => (await import('./commands/doctor.js')).runDoctor,
  },
  {
    name: 'report',
    describe: 'Answers from the CSV history: hourly or daily rows and findings (memory growth, idle or unbalanced GPUs, gaps, errors)',
    options: REPORT_OPTIONS,
    run: async () => (await import('./commands/report.js')).runReport,
  },
  {
    name: 'pulse',
    describe: 'Sample one GPU fast for a few seconds and tell idle, saturated, data-starved, throttled and small-kernel work apart',
    options: PULSE_OPTIONS,
    run: async () => (await import('./commands/pulse.js')).runPulse,
  },
  {
    name: 'install',
    describe: 'Install the systemd units and /etc/default/gpu-textfile, create the directories, enable the timers',
    options: INSTALL_OPTIONS,
    run: async () => (await import('./commands/install.js')).runInstall,
  },
  {
    name: 'uninstall',
    describe: 'Disable and remove what install wrote (CSV and state data stay)',
    options: INSTALL_OPTIONS,
    run: async () => (await import('./commands/install.js')).runUninstall,
  },
];

/** Bad usage: the message, a pointer to --help, exit status 2 (as for the commands' own checks). */
function usageError(message: string | undefined): never {
  process.stderr.write(`gpu-textfile: ${message ?? 'bad usage'} (see --help)\n`);
  process.exit(2);
}

/** What every yargs parser here shares: strict, usage errors as above, help wrapped to the terminal. */
async function strictParser(args: readonly string[], scriptName: string) {
  const { default: yargs } = await import('yargs');
  return yargs(args)
    .scriptName(scriptName)
    .strict()
    .fail((message, error) => {
      if (error) throw error;
      usageError(message);
    })
    .help()
    .wrap(Math.min(110, process.stdout.columns || 110));
}

/** Runs the command named by argv; resolves to its exit status. */
export async function main(args: readonly string[]): Promise<number> {
  const command = COMMANDS.find((c) => c.name === args[0]);
  const wantsHelp = args.some((arg) => arg === '--help' || arg === '-h' || arg === '--version');

  if (command && command.name === 'collect' && !wantsHelp) {
    // The every-15-seconds path: the option table read without yargs, whose loading alone costs more
    // than a third of a one-shot run's own CPU time. Same table, same rules (a test compares them).
    const parsed = parseOptions(command.options, args.slice(1), process.env);
    if (typeof parsed === 'string') usageError(parsed);
    return (await command.run())(parsed as never);
  }
  if (command) {
    // One /etc/default/gpu-textfile serves every command, but strict parsing would call another
    // command's GPU_TEXTFILE_* variable an unknown argument: keep only this command's.
    const known = new Set(Object.keys(command.options).map(envName));
    for (const key of Object.keys(process.env)) if (key.startsWith('GPU_TEXTFILE_') && !known.has(key)) delete process.env[key];
    const argv = await (await strictParser(args.slice(1), `gpu-textfile ${command.name}`))
      .usage(`$0\n\n${command.describe}`)
      .options(command.options)
      .env('GPU_TEXTFILE')
      .version(false)
      .parseAsync();
    return (await command.run())(argv as never);
  }
  let cli = await strictParser(args, 'gpu-textfile');
  for (const { name, describe } of COMMANDS) cli = cli.command(name, describe);
  await cli
    .demandCommand(1, `Name a command: ${COMMANDS.map((c) => c.name).join(', ')}`)
    .version(PACKAGE_VERSION)
    .parseAsync();
  return 0;
}
