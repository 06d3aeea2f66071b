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
  .demandCommand(1, 'Name a command: collect')
  .help()
  .version()
  .wrap(Math.min(110, process.stdout.columns || 110));

await cli.parseAsync();
