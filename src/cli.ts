import yargs, { type Argv } from 'yargs';
import { hideBin } from 'yargs/helpers';
import { archiveOptions, collectOptions, doctorOptions, installOptions } from './commands/options.js';

type Run = (argv: never) => Promise<number>;

/** The commands. Only collect runs every 15 seconds: each command's code is imported when it runs. */
const COMMANDS: { name: string; describe: string; options: (y: Argv) => Argv; run: () => Promise<Run> }[] = [
  {
    name: 'collect',
    describe: 'Run nvidia-smi once and publish the metrics (and CSV rows)',
    options: collectOptions,
    run: async () => (await import('./commands/collect.js')).runCollect,
  },
  {
    name: 'archive',
    describe: 'Rotate the CSV trail: copy each live CSV to a dated archive, then truncate it, losing no row',
    options: archiveOptions,
    run: async () => (await import('./commands/archive.js')).runArchive,
  },
  {
    name: 'doctor',
    describe: 'Say why nvidia-smi fails and what to run: walks the checks an expert would',
    options: doctorOptions,
    run: async () => (await import('./commands/doctor.js')).runDoctor,
  },
  {
    name: 'install',
    describe: 'Install the systemd units and /etc/default/gpu-textfile, create the directories, enable the timers',
    options: installOptions,
    run: async () => (await import('./commands/install.js')).runInstall,
  },
  {
    name: 'uninstall',
    describe: 'Disable and remove what install wrote (CSV and state data stay)',
    options: installOptions,
    run: async () => (await import('./commands/install.js')).runUninstall,
  },
];

/** Bad usage: the message, a pointer to --help, exit status 2 (as for collect's own checks). */
function usageError(message: string | undefined, error: Error | undefined): never {
  if (error) throw error;
  process.stderr.write(`gpu-textfile: ${message ?? 'bad usage'} (see --help)\n`);
  process.exit(2);
}

const args = hideBin(process.argv);
const command = COMMANDS.find((c) => c.name === args[0]);

if (command) {
  // One /etc/default/gpu-textfile serves every command, but strict parsing would call another
  // command's GPU_TEXTFILE_* variable an unknown argument: keep only this command's.
  const declared = command.options(yargs([])) as unknown as { getOptions(): { key: Record<string, unknown> } };
  const known = new Set(Object.keys(declared.getOptions().key).map((key) => key.replace(/-/g, '_').toUpperCase()));
  for (const key of Object.keys(process.env)) {
    if (key.startsWith('GPU_TEXTFILE_') && !known.has(key.slice('GPU_TEXTFILE_'.length))) delete process.env[key];
  }
  // The command's options alone, not yargs' command machinery: it builds the whole help text on
  // every run, a tenth of a one-shot collect's CPU time.
  const argv = await command
    .options(yargs(args.slice(1)).scriptName(`gpu-textfile ${command.name}`).usage(`$0\n\n${command.describe}`))
    .env('GPU_TEXTFILE')
    .strict()
    .fail(usageError)
    .help()
    .version(false)
    .wrap(Math.min(110, process.stdout.columns || 110))
    .parseAsync();
  process.exitCode = await (await command.run())(argv as never);
} else {
  let cli = yargs(args).scriptName('gpu-textfile').strict().fail(usageError);
  for (const { name, describe } of COMMANDS) cli = cli.command(name, describe);
  await cli
    .demandCommand(1, `Name a command: ${COMMANDS.map((c) => c.name).join(', ')}`)
    .help()
    .version()
    .wrap(Math.min(110, process.stdout.columns || 110))
    .parseAsync();
}
