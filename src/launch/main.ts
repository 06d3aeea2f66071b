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
import { headStartFor, type StartCalls } from './head-start.js';
import { type Cli, start } from './start.js';

/** Hash of dist/cli.js, set by the build. */
declare const BUILD_ID: string;

const args = process.argv.slice(2);
const bundle = join(__dirname, 'cli.js');
const cacheDir = args[0] === 'collect' ? process.env.NODE_COMPILE_CACHE : undefined;
const uid = process.geteuid?.() ?? -1;
start(
  args,
  () => {
    if (cacheDir === undefined) return { cli: require(bundle) as Cli, save: () => {} };
    const { exports, save } = loadCached<Cli>(bundle, join(cacheDir, cacheFileName(BUILD_ID, process.version, process.arch)), uid);
    return { cli: exports, save };
  },
  // The units' collect: its nvidia-smi calls start from the last run's record, kept beside the code cache.
  // The code that starts them (and Node's child_process under it, 3-4 ms) is loaded only for a record:
  // required here, the bundle evaluates it on first use, not with the launcher.
  () =>
    cacheDir === undefined || cacheDir === ''
      ? undefined
      : headStartFor(
          cacheDir,
          args,
          process.env,
          uid,
          () => (require('../sources/nvidia-smi/head-start-calls.js') as { startRecordedCalls: StartCalls }).startRecordedCalls,
        ),
);
