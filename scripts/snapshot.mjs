// The packaged program's startup snapshot (docs/development.md, "Startup snapshot"): the whole CLI
// bundled with src/launch/snapshot.ts and evaluated once by `node --build-snapshot`, so that a start
// skips loading and compiling it. scripts/package.mjs calls buildSnapshot() for the runtime it ships;
// the tests run it alone:
//   node scripts/snapshot.mjs --node PATH/bin/node --out FILE
//   node scripts/snapshot.mjs --launcher        (prints bin/gpu-textfile, which starts from it)
// A snapshot runs only on the very Node.js binary that built it (Node.js refuses any other with one
// line and exit status 14), so it is built by running that binary: a package for a CPU this machine
// cannot run gets none (bin/gpu-textfile then starts as usual).
//
// Reproducible (two builds of one commit give the same bytes) when the build can run in namespaces
// of its own (`unshare`, as root or with unprivileged user namespaces): V8 writes into the snapshot
// the builder's process id, its working directory and Node.js's path, so the build runs as process 1
// of a PID namespace, from a fixed directory bind-mounted over its scratch one, with a copy of the
// runtime there; --predictable fixes V8's hash and random seeds (the program reseeds Math.random at
// start: V8 does so on deserializing) and --no-warnings keeps Node's warnings, which hold the process
// id, out of the heap. Elsewhere it is built without them, and says so.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { bundleOptions, separateFiles } from './bundle-options.mjs';

const ROOT = resolve(import.meta.dirname, '..');
/** The fixed directory every build runs in, its own scratch directory mounted over it. */
const FIXED = '/tmp/.gpu-textfile-snapshot';
/** The global src/launch/snapshot.ts fills at start with where the program's files are. */
const FILES = 'globalThis.__gpuTextfileFiles';

/**
 * bin/gpu-textfile: a shell script, not a link to node, that runs the bundle with the Node.js beside it
 * from wherever the tree was unpacked or linked from (/usr/bin/gpu-textfile), from the startup snapshot
 * where there is one. Node.js refuses a snapshot another build of it made (one line on stderr, exit
 * status 14, before any of our code runs), and the program then starts as usual: so the shell waits
 * for that node instead of exec'ing it (the exit status, or 128 + a signal's number, is passed on;
 * systemd stops the whole control group). Exit status 14 is Node's alone for every command but run,
 * which passes its job's on: run starts without the snapshot.
 */
export const LAUNCHER = `#!/bin/sh
# gpu-textfile with its own Node.js (node/ beside bin/): no Node.js needed on the host.
here=$(dirname "$(readlink -f "$0")")
node="$here/../node/bin/node"
script="$here/../dist/gpu-textfile.js"
blob="$here/../dist/gpu-textfile.blob"
# Started from the startup snapshot (docs/development.md, "Startup snapshot"), where this CPU's package has one;
# one this Node.js refuses (exit 14: another runtime built it) means a normal start instead. Not for run,
# whose exit status is its job's (14 too, and the job must not run twice), and whose start is nothing beside a job.
if [ -f "$blob" ] && [ "\${1:-}" != run ]; then
  "$node" --snapshot-blob "$blob" "$script" "$@"
  status=$?
  [ "$status" -eq 14 ] || exit "$status"
fi
exec "$node" "$script" "$@"
`;

/**
 * The snapshot's one file: the CLI with src/launch/snapshot.ts. Its __dirname, __filename and
 * import.meta.url, and require() of its own files (dist/report.js, …), are the run-time ones; Node's
 * modules are required at build time, by the builder's own require().
 */
export async function bundle(into) {
  const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const common = bundleOptions(version);
  await build({
    ...common,
    outdir: undefined,
    outfile: join(into, 'snapshot.js'),
    absWorkingDir: ROOT,
    entryPoints: [join(ROOT, 'src/launch/snapshot.ts')],
    plugins: [separateFiles],
    define: {
      PACKAGE_VERSION: common.define.PACKAGE_VERSION,
      __dirname: `${FILES}.dir`,
      __filename: `${FILES}.file`,
      'import.meta.url': `${FILES}.url`,
    },
    banner: { js: `var require = ((builtin) => (id) => (id.startsWith('.') ? ${FILES}.require(id) : builtin(id)))(require);` },
  });
}

const NAMESPACED = `mount --bind "$0" ${FIXED} && cd ${FIXED} && exec ./node --predictable --no-warnings --snapshot-blob gpu-textfile.blob --build-snapshot snapshot.js`;

/** Builds the snapshot with `node` (the runtime that will run it) into `out`; says whether the bytes are reproducible. */
export async function buildSnapshot(node, out) {
  const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-snapshot-'));
  try {
    await bundle(work);
    copyFileSync(node, join(work, 'node'));
    let reproducible = true;
    try {
      mkdirSync(FIXED, { recursive: true });
      execFileSync('unshare', ['--user', '--map-root-user', '--pid', '--fork', '--mount', 'sh', '-c', NAMESPACED, work], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    } catch {
      // No unshare, or no user namespaces for this user: the same snapshot, its bytes not reproducible.
      reproducible = false;
      execFileSync(
        join(work, 'node'),
        ['--predictable', '--no-warnings', '--snapshot-blob', 'gpu-textfile.blob', '--build-snapshot', 'snapshot.js'],
        {
          cwd: work,
          stdio: ['ignore', 'ignore', 'inherit'],
        },
      );
    }
    copyFileSync(join(work, 'gpu-textfile.blob'), out);
    return { reproducible };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === import.meta.filename) {
  const { values } = parseArgs({ options: { node: { type: 'string' }, out: { type: 'string' }, launcher: { type: 'boolean' } } });
  if (values.launcher) process.stdout.write(LAUNCHER);
  else if (!values.node || !values.out) {
    console.error('usage: node scripts/snapshot.mjs --node PATH/bin/node --out FILE   (or --launcher: print bin/gpu-textfile)');
    process.exit(2);
  } else {
    const { reproducible } = await buildSnapshot(values.node, values.out);
    if (!reproducible) console.error('snapshot built without namespaces (no unshare): its bytes differ from build to build');
  }
}
