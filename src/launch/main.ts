// The installed command, dist/gpu-textfile.js: runs the CLI bundle, dist/cli.js. A timer starts
// `collect` every 15 seconds and compiling the bundle is a good part of each start, so when
// NODE_COMPILE_CACHE names a directory (the systemd units set it) collect runs from V8 bytecode kept
// there. Node.js 20 has no compile cache of its own; this one, kept by this small file loaded before
// anything else, serves Node.js 20 and 22 alike.
// First: on a Node.js too old for what follows, say so in one line (the launcher parses on Node 12).
import { exitIfUnsupported } from './runtime-check.js';
exitIfUnsupported();

import { join } from 'node:path';
import { cacheFileName, loadCached } from './code-cache.js';

/** Hash of dist/cli.js, set by the build. */
declare const BUILD_ID: string;

type Cli = { main: (args: readonly string[]) => Promise<number> };

const args = process.argv.slice(2);

// Node opens its inspector, a debugger on 127.0.0.1:9229, on SIGUSR1 unless a listener is installed:
// any local user could then attach to a process that runs as root. No command of ours ever listens
// for a debugger, so a listener comes first, for every command (run adds its own: the job gets it).
process.on('SIGUSR1', () => {});

// A reader that went away (`gpu-textfile install --dry-run | head -1`) is no error worth a stack
// trace: stop quietly, as other commands in a pipeline do. Not `run`: it passes the broken pipe on
// to its job (src/run/job.ts), and the job's exit status is still its own.
if (args[0] !== 'run') {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    });
  }
}
const bundle = join(__dirname, 'cli.js');
const cacheDir = args[0] === 'collect' ? process.env.NODE_COMPILE_CACHE : undefined;
const { exports: cli, save } = cacheDir
  ? loadCached<Cli>(bundle, join(cacheDir, cacheFileName(BUILD_ID, process.version, process.arch)), process.geteuid?.() ?? -1)
  : { exports: require(bundle) as Cli, save: () => {} };
void cli.main(args).then((status) => {
  process.exitCode = status;
  // Only a collect that succeeded ran the path the next runs take.
  if (status === 0) save();
});
