// Bundles the CLI into dist/ as CommonJS, which Node.js loads faster than ES modules and which V8's
// code cache can hold (src/launch/):
// - gpu-textfile.js, the command: a small launcher that runs cli.js, from the code cache for collect.
// - cli.js: all that `collect` runs, the code it needs only later (publishing, the daemon mode)
//   included but evaluated on first use.
// - one file for every other command, yargs and the failure-path doctor, required when they run.
import { build } from 'esbuild';
import { bundleOptions, SEPARATE, separateFiles, YARGS } from './bundle-options.mjs';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const { version, engines } = JSON.parse(readFileSync('package.json', 'utf8'));
// src/launch/runtime-check.ts compares the running Node.js with this range, number by number.
if (!/^>=\d+(\.\d+){0,2}$/.test(engines.node)) throw new Error(`engines.node ${engines.node}: only ">=X.Y.Z" is checked at run time`);

const common = bundleOptions(version);

rmSync('dist', { recursive: true, force: true });
await build({
  ...common,
  plugins: [separateFiles],
  entryPoints: { cli: 'src/cli.ts', ...Object.fromEntries(Object.entries(SEPARATE).map(([source, name]) => [name, source])) },
});
// Our bundles require() these files as Node.js requires CommonJS from an ES module: the default export
// is module.exports itself. So yargs' module.exports is its default export, the function.
await build({ ...common, entryPoints: { yargs: YARGS }, footer: { js: 'module.exports = module.exports.default;' } });
const buildId = createHash('sha256').update(readFileSync('dist/cli.js')).digest('hex').slice(0, 16);
await build({
  ...common,
  entryPoints: { 'gpu-textfile': 'src/launch/main.ts' },
  define: { BUILD_ID: JSON.stringify(buildId), NODE_ENGINES: JSON.stringify(engines.node) },
  banner: { js: '#!/usr/bin/env node' },
  // The launcher must parse and start on the old Node.js of the distributions (12 on Ubuntu 22.04)
  // to say which version it needs (src/launch/runtime-check.ts): its syntax and `node:` imports are
  // lowered to what Node.js 12 reads. The rest of dist/ is built for what engines claims.
  target: 'node12',
});
// The watchdog thread of collect --source nvml (src/collect/watchdog.ts starts it from this file).
await build({ ...common, entryPoints: { 'nvml-watchdog': 'src/collect/watchdog-worker.ts' } });
// The GPU reader of run and pulse with --source nvml: a process of its own (src/run/reader.ts starts it).
await build({ ...common, plugins: [separateFiles], entryPoints: { 'gpu-reader': 'src/run/reader-main.ts' } });
// The CSV trail generator, for bench/make-history.mjs (the tests and report --demo use the source).
await build({ ...common, entryPoints: { 'history-generator': 'src/report/history-generator.ts' } });
// The package is "type": "module"; these files are CommonJS.
writeFileSync('dist/package.json', '{ "type": "commonjs" }\n');
chmodSync('dist/gpu-textfile.js', 0o755);
// collect --source demo and pulse --source demo replay these real recordings (src/sources/demo/);
// they ship in dist/demo, found from the bundle wherever the package is installed.
const DEMO = {
  'h200x2-load.query-gpu.csv': 'captures/h200x2__580.159.04__linux-load/query-gpu.csv',
  'h200x2-load.query-compute-apps.csv': 'captures/h200x2__580.159.04__linux-load/query-compute-apps.csv',
  'h200x2-saturated.lms500.csv': 'series/h200x2__580.159.04__saturated__lms500.csv',
  'h200x2-tiny.lms500.csv': 'series/h200x2__580.159.04__tiny__lms500.csv',
  'h200x2-idle.lms500.csv': 'series/h200x2__580.159.04__idle__lms500.csv',
  'h200x2-idle.query-gpu.csv': 'captures/h200x2__580.159.04__linux-idle/query-gpu.csv',
  'h200x2-idle.query-compute-apps.csv': 'captures/h200x2__580.159.04__linux-idle/query-compute-apps.csv',
  'h200.query-gpu.csv': 'captures/h200__590.48.01__linux-load/query-gpu.csv',
  'h200.query-compute-apps.csv': 'captures/h200__590.48.01__linux-load/query-compute-apps.csv',
  'h200-saturated.lms200.csv': 'series/h200__580.159.04__saturated__lms200.csv',
  'h200-starved-30.lms200.csv': 'series/h200__580.159.04__starved-30__lms200.csv',
  'h200-h2d-pinned.lms200.csv': 'series/h200__580.159.04__h2d-pinned__lms200.csv',
  'h200-idle.lms200.csv': 'series/h200__580.159.04__idle__lms200.csv',
  'h200-bursts-10.lms200.csv': 'series/h200__580.159.04__bursts-10__lms200.csv',
};
mkdirSync('dist/demo');
for (const [name, from] of Object.entries(DEMO)) copyFileSync(`test/fixtures/${from}`, `dist/demo/${name}`);

// collect --source nvml calls NVML through koffi's native module (src/sources/nvml/koffi.ts), shipped
// for linux-x64 and linux-arm64 in dist/koffi/linux_<arch>/ (glibc builds): from node_modules when npm
// installed it for this CPU, else from the registry's tarball kept in vendor/koffi/ (see its README).
const KOFFI_VERSION = JSON.parse(readFileSync('node_modules/koffi/package.json', 'utf8')).version;
for (const arch of ['x64', 'arm64']) {
  const installed = `node_modules/@koromix/koffi-linux-${arch}`;
  const target = `dist/koffi/linux_${arch}`;
  mkdirSync(target, { recursive: true });
  let from = installed;
  if (!existsSync(`${installed}/linux_${arch}/koffi.node`)) {
    from = mkdtempSync(join(tmpdir(), 'koffi-'));
    execFileSync('tar', ['-xzf', `vendor/koffi/koromix-koffi-linux-${arch}-${KOFFI_VERSION}.tgz`, '-C', from, '--strip-components=1']);
  }
  const { version } = JSON.parse(readFileSync(`${from}/package.json`, 'utf8'));
  if (version !== KOFFI_VERSION) throw new Error(`${from}: koffi native module ${version}, koffi is ${KOFFI_VERSION}`);
  copyFileSync(`${from}/linux_${arch}/koffi.node`, `${target}/koffi.node`);
  if (from !== installed) rmSync(from, { recursive: true, force: true });
}
copyFileSync('node_modules/koffi/LICENSE.txt', 'dist/koffi/LICENSE.txt');
