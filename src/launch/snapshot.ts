// The packaged program's startup snapshot (docs/development.md, "Startup snapshot"): scripts/snapshot.mjs
// bundles this file with the whole CLI and runs it once under `node --build-snapshot`; the program then
// starts with the CLI's modules already evaluated (`node --snapshot-blob dist/gpu-textfile.blob
// dist/gpu-textfile.js ARGS`, which bin/gpu-textfile runs). What is evaluated here, at build time, is
// only the modules' top level: nothing that must see the host (environment, arguments, working
// directory, /proc, koffi, /etc/default/gpu-textfile) is read before the function below runs.
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startupSnapshot } from 'node:v8';
import { main } from '../cli.js';
import { headStartFor } from './head-start.js';
import { startRecordedCalls } from '../sources/nvidia-smi/head-start-calls.js';
import { start } from './start.js';
// What the one-shot loads on first use (import() in the CLI), evaluated here, at build time, so that a
// start from the snapshot finds it ready: the collect command, the nvidia-smi source, the publishing
// code and the watchdog. Their top level reads nothing of the host (docs/development.md, "Startup
// snapshot", says how that was checked).
import '../collect/one-shot.js';
import '../collect/watchdog.js';
import '../commands/collect.js';
import '../publish/publish.js';
import '../sources/nvidia-smi/source.js';
import '../sources/demo/source.js';

/**
 * Where the program's files are at run time. The bundle built for the snapshot reads __dirname,
 * __filename and import.meta.url from here, and requires its own files (dist/report.js, …) through
 * `require` (scripts/snapshot.mjs defines them so): at build time the snapshot is made in a scratch
 * directory, and the tree it runs from may be unpacked anywhere.
 */
interface ProgramFiles {
  dir: string;
  file: string;
  url: string;
  require: NodeJS.Require;
}

const holder = globalThis as typeof globalThis & { __gpuTextfileFiles?: ProgramFiles };

startupSnapshot.setDeserializeMainFunction(() => {
  // bin/gpu-textfile names the launcher, dist/gpu-textfile.js, as a plain start would run it: the
  // arguments are then where the CLI expects them, and dist/ is beside it.
  const script = process.argv[1];
  if (script === undefined) {
    process.stderr.write('gpu-textfile: started from its snapshot without dist/gpu-textfile.js as the first argument\n');
    process.exitCode = 2;
    return;
  }
  holder.__gpuTextfileFiles = { dir: dirname(script), file: script, url: pathToFileURL(script).href, require: createRequire(script) };
  const args = process.argv.slice(2);
  // As from dist/cli.js (src/launch/main.ts): the units' collect begins its calls from the last run's record.
  const cacheDir = args[0] === 'collect' ? process.env.NODE_COMPILE_CACHE : undefined;
  start(
    args,
    () => ({ cli: { main }, save: () => {} }),
    () => (cacheDir ? headStartFor(cacheDir, args, process.env, process.geteuid?.() ?? -1, () => startRecordedCalls) : undefined),
  );
});
