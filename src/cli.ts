import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { collectOptions } from './commands/collect-options.js';

// Only collect runs every 15 seconds: every command's code is imported when that command runs.
const cli = yargs(hideBin(process.argv))
  .scriptName('gpu-textfile')
  .env('GPU_TEXTFILE')
  .strict()
  .command(
    'collect',
    'Run nvidia-smi once and publish the metrics (and CSV rows)',
    (y) => collectOptions(y),
    async (argv) => {
      const { runCollect } = await import('./commands/collect.js');
      process.exitCode = await runCollect(argv as never);
    },
  )
  .command(
    'archive',
    'Rotate the CSV trail: copy each live CSV to a dated archive, then truncate it, losing no row',
    (y) =>
      y
        .option('csv-dir', { type: 'string', demandOption: true, describe: 'Directory holding the live <task>.csv files' })
        .option('keep', { type: 'number', default: 14, describe: 'Archives kept per task' })
        .option('max-age', { type: 'number', describe: 'Remove archives whose data starts more than this many days ago' })
        .option('compress', { type: 'boolean', default: true, describe: 'gzip archives (--no-compress to keep them plain)' })
        .option('delay-compress', { type: 'boolean', default: false, describe: 'Leave the newest archive plain until the next run' })
        .option('min-size', { type: 'number', default: 0, describe: 'Leave live files smaller than this many bytes alone' }),
    async (argv) => {
      const { runArchive } = await import('./commands/archive.js');
      process.exitCode = await runArchive(argv as never);
    },
  )
  .demandCommand(1, 'Name a command: collect or archive')
  .help()
  .version()
  .wrap(Math.min(110, process.stdout.columns || 110));

await cli.parseAsync();
