// `npm run package`: gpu-textfile with its own Node.js, for hosts whose distribution ships a Node.js it
// cannot use (Ubuntu 22.04: 12, Ubuntu 24.04 and Debian 12: 18). Its options are in USAGE below
// (`npm run package -- --help`); docs/development.md, "Packages", says what each artefact holds.
// The runtime is the npm registry's node-linux-ARCH package, pinned in package.json's runtimes.package:
// the same bytes nodejs.org ships, fetched (or taken from npm's cache, offline) like any other package.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { configUnits, debControl, debScripts, generator, rpmSpec } from './package-meta.mjs';
import { buildSnapshot, LAUNCHER } from './snapshot.mjs';

const ROOT = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const USAGE = `usage: npm run package [-- OPTIONS]   (or: node scripts/package.mjs [OPTIONS], after npm run build)
Builds gpu-textfile with its own Node.js ${pkg.runtimes.package} into package/: for each CPU, a tarball
(gpu-textfile-VERSION-linux-ARCH.tar.gz), a .deb and an .rpm. Takes minutes; each step is said as it starts.
  --arch x64|arm64          a CPU to build for; repeat for both (default: x64 and arm64)
  --format tar|deb|rpm      an artefact to build; repeat for several (default: all three)
  --version V               the packages' version (default: package.json's, ${pkg.version})
  --out DIR                 where the artefacts go (default: package/)
  --fast                    gzip instead of xz for the .deb and .rpm: quicker, larger (the tests use it)
  --extra-setting NAME=VALUE  a line added to /etc/default/gpu-textfile (a test builds an upgrade with it)
  --snapshot                also ship a V8 startup snapshot that bin/gpu-textfile starts from (slower than
                            the code cache on Node.js 24: docs/development.md, "Startup snapshot")
  -h, --help                this text
Needs the registry (or npm's cache) for the runtime, dpkg-deb, rpmbuild and binutils' strip for each CPU
(scripts/setup-test-host.sh installs them). A startup snapshot is built by running the packaged Node.js,
so only for this machine's CPU (${process.arch}); a package for another CPU starts without one.`;
let parsed;
try {
  parsed = parseArgs({
    options: {
      help: { type: 'boolean', short: 'h', default: false },
      snapshot: { type: 'boolean', default: false },
      arch: { type: 'string', multiple: true, default: ['x64', 'arm64'] },
      format: { type: 'string', multiple: true, default: ['tar', 'deb', 'rpm'] },
      version: { type: 'string', default: pkg.version },
      out: { type: 'string', default: join(ROOT, 'package') },
      fast: { type: 'boolean', default: false },
      'extra-setting': { type: 'string', multiple: true, default: [] },
    },
  });
} catch (error) {
  console.error(`package: ${error.message}\n${USAGE}`);
  process.exit(2);
}
const { values } = parsed;
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
/** A step said as it starts, so that minutes of xz or rpmbuild are not silence. */
const step = (text) => console.log(`package: ${text}`);
const VERSION = values.version;
const NODE = pkg.runtimes.package;
const OUT = resolve(values.out);
/** Where the packaged program lives on a host installed from the .deb or the .rpm. */
const LIB = '/usr/lib/gpu-textfile';
const UNITS = [
  'gpu-textfile.service',
  'gpu-textfile.timer',
  'gpu-textfile-archive.service',
  'gpu-textfile-archive.timer',
  'gpu-textfile-daemon.service',
];
/** The units only the packages have: a change to /etc/default/gpu-textfile reloads systemd (package-meta.mjs). */
const CONFIG_UNITS = ['gpu-textfile-config.path', 'gpu-textfile-config.service'];
/**
 * Enabled and started on first install: the timers and the watcher of /etc/default/gpu-textfile; the
 * daemon service is the alternative, left off.
 */
const STARTED = ['gpu-textfile.timer', 'gpu-textfile-archive.timer', 'gpu-textfile-config.path'];
/** Where systemd runs the package's generator from (package-meta.mjs says what it does). */
const GENERATOR = '/usr/lib/systemd/system-generators/gpu-textfile';
/** The packages' units directory: /usr/lib, where Debian 13 requires it (lintian: aliased-location) and every systemd looks. */
const UNIT_DIR = '/usr/lib/systemd/system';
/** The textfile directory each package's /etc/default/gpu-textfile names: Debian's node_exporter's, or upstream's. */
const TEXTFILE_DIR = { deb: '/var/lib/prometheus/node-exporter', rpm: '/var/lib/node_exporter/textfile' };
const CSV_DIR = '/var/log/gpu-textfile';
const DEB_ARCH = { x64: 'amd64', arm64: 'arm64' };
/** binutils' strip for each CPU (Debian: binutils, binutils-aarch64-linux-gnu; scripts/setup-test-host.sh). */
const STRIP = { x64: 'x86_64-linux-gnu-strip', arm64: 'aarch64-linux-gnu-strip' };
const RPM_ARCH = { x64: 'x86_64', arm64: 'aarch64' };

const run = (command, args, options = {}) => execFileSync(command, args, { stdio: ['ignore', 'pipe', 'inherit'], ...options });

/** The registry's Node.js for `arch`, unpacked once under node_modules/.cache (as the tests' runtimes). */
function runtime(arch) {
  const dir = join(ROOT, 'node_modules/.cache/gpu-textfile-runtimes', `${arch}-${NODE}`);
  if (existsSync(join(dir, 'bin/node'))) return dir;
  mkdirSync(join(dir, '..'), { recursive: true });
  const work = mkdtempSync(join(dir, '..', '.fetch-'));
  try {
    const [{ filename }] = JSON.parse(
      run('npm', ['pack', '--prefer-offline', '--json', '--pack-destination', work, `node-linux-${arch}@${NODE}`], { cwd: work }),
    );
    mkdirSync(join(work, 'unpacked'));
    run('tar', ['-xzf', join(work, filename), '-C', join(work, 'unpacked'), '--strip-components=1']);
    try {
      renameSync(join(work, 'unpacked'), dir);
    } catch (error) {
      // Another build (or test) unpacked the same runtime meanwhile: its copy is as good.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return dir;
}

/** The runtime's binary for `arch`, stripped, and its startup snapshot when this machine can run it: built once per CPU. */
const runtimeBuilds = new Map();
async function builtRuntime(arch) {
  if (runtimeBuilds.has(arch)) return runtimeBuilds.get(arch);
  const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-runtime-'));
  step(`${arch}: Node.js ${NODE} (the registry's node-linux-${arch}), stripped`);
  const node = runtime(arch);
  const binary = join(work, 'node');
  cpSync(join(node, 'bin/node'), binary);
  // The registry's binary carries its symbol table (17 MiB of 121): stripped, as Debian policy asks of
  // a binary package, and as Debian's own nodejs is.
  run(STRIP[arch], ['--strip-unneeded', binary]);
  let blob;
  // Only when asked: measured on an H200 host, a start from it was 22 ms slower than from the code
  // cache the units use (docs/development.md, "Startup snapshot").
  if (values.snapshot && arch !== process.arch)
    step(`${arch}: no startup snapshot (only the Node.js that runs one can build it; this machine is ${process.arch})`);
  else if (values.snapshot) {
    step(`${arch}: startup snapshot (node --build-snapshot, a few seconds)`);
    blob = join(work, 'gpu-textfile.blob');
    const { reproducible } = await buildSnapshot(binary, blob);
    if (!reproducible) step(`${arch}: built without namespaces (no unshare): the snapshot's bytes differ from build to build`);
  }
  const built = { dir: node, binary, blob, work };
  runtimeBuilds.set(arch, built);
  return built;
}

/** The program's tree: what /usr/lib/gpu-textfile holds, and the tarball's top directory. */
async function program(arch, into) {
  const built = await builtRuntime(arch);
  mkdirSync(join(into, 'node/bin'), { recursive: true });
  cpSync(built.binary, join(into, 'node/bin/node'));
  cpSync(join(built.dir, 'LICENSE'), join(into, 'node/LICENSE'));
  cpSync(join(ROOT, 'dist'), join(into, 'dist'), { recursive: true });
  if (built.blob) cpSync(built.blob, join(into, 'dist/gpu-textfile.blob'));
  // bin/gpu-textfile runs it with the Node.js beside it: its `#!/usr/bin/env node` would find another,
  // or none. The line becomes a comment (line numbers in stack traces stay), the file not executable.
  const launcher = join(into, 'dist/gpu-textfile.js');
  writeFileSync(launcher, readFileSync(launcher, 'utf8').replace(/^#!.*/, '// run by bin/gpu-textfile with node/bin/node'));
  chmodSync(launcher, 0o644);
  // koffi's native module for this CPU only: loaded from here, root-owned, never unpacked at run time.
  for (const other of readdirSync(join(into, 'dist/koffi')))
    if (other.startsWith('linux_') && other !== `linux_${arch}`) rmSync(join(into, 'dist/koffi', other), { recursive: true });
  // A shared library, not a program: 0644 (the registry's arm64 tarball has it 0755).
  chmodSync(join(into, `dist/koffi/linux_${arch}/koffi.node`), 0o644);
  for (const part of ['systemd', 'docs']) cpSync(join(ROOT, part), join(into, part), { recursive: true });
  mkdirSync(join(into, 'bin'));
  writeFileSync(join(into, 'bin/gpu-textfile'), LAUNCHER);
  chmodSync(join(into, 'bin/gpu-textfile'), 0o755);
}

/** The units and /etc/default/gpu-textfile as install renders them, for the package's paths. */
async function rendered(textfileDir) {
  const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-units-'));
  try {
    await build({
      entryPoints: [join(ROOT, 'src/deploy/units.ts')],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      outfile: join(work, 'units.cjs'),
      logLevel: 'warning',
    });
    const { renderUnit, renderEnvironmentFile } = await import(join(work, 'units.cjs'));
    const choices = { textfileDir, csvDir: CSV_DIR };
    const programPaths = { node: `${LIB}/node/bin/node`, script: `${LIB}/dist/gpu-textfile.js` };
    const units = Object.fromEntries(
      UNITS.map((name) => [name, renderUnit(name, readFileSync(join(ROOT, 'systemd', name), 'utf8'), programPaths, choices)]),
    );
    const extra = values['extra-setting'].map((line) => `${line}\n`).join('');
    return { units, environment: renderEnvironmentFile(choices) + extra };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The file tree a system package installs, under `root`. */
async function systemTree(arch, root, textfileDir) {
  await program(arch, join(root, LIB.slice(1)));
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  symlinkSync('../lib/gpu-textfile/bin/gpu-textfile', join(root, 'usr/bin/gpu-textfile'));
  const { units, environment } = await rendered(textfileDir);
  mkdirSync(join(root, UNIT_DIR), { recursive: true });
  const packaged = { ...units, ...configUnits(`file:${LIB}/docs/deployment.md`) };
  for (const [name, text] of Object.entries(packaged)) writeFileSync(join(root, UNIT_DIR, name), text);
  mkdirSync(join(root, GENERATOR, '..'), { recursive: true });
  writeFileSync(join(root, GENERATOR), generator({ textfileDir, csvDir: CSV_DIR }));
  chmodSync(join(root, GENERATOR), 0o755);
  // The textfile directory, owned by the package: without Debian's node_exporter package (only a
  // Recommends) nothing else creates it (the generator's ExecStartPre= does too, where it runs).
  mkdirSync(join(root, textfileDir), { recursive: true });
  mkdirSync(join(root, 'etc/default'), { recursive: true });
  writeFileSync(join(root, 'etc/default/gpu-textfile'), environment);
  const doc = join(root, 'usr/share/doc/gpu-textfile');
  mkdirSync(doc, { recursive: true });
  cpSync(join(ROOT, 'README.md'), join(doc, 'README.md'));
  writeFileSync(
    join(doc, 'copyright'),
    `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\nUpstream-Name: gpu-textfile\n\nFiles: *\nCopyright: gpu-textfile authors\nLicense: MIT\n\nFiles: usr/lib/gpu-textfile/node/*\nCopyright: Node.js contributors\nLicense: MIT and others, see /usr/lib/gpu-textfile/node/LICENSE\n\nFiles: usr/lib/gpu-textfile/dist/koffi/*\nCopyright: Niels Martignène\nLicense: MIT\n\nLicense: MIT\n${readFileSync(join(ROOT, 'LICENSE'), 'utf8').replace(/^$/gm, '.').replace(/^/gm, ' ')}`,
  );
}

async function tarball(arch) {
  const name = `gpu-textfile-${VERSION}-linux-${arch}`;
  const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-tar-'));
  try {
    await program(arch, join(work, name));
    for (const file of ['README.md', 'LICENSE']) cpSync(join(ROOT, file), join(work, name, file));
    const file = join(OUT, `${name}.tar.gz`);
    run('tar', ['-czf', file, '--owner=0', '--group=0', '--numeric-owner', '-C', work, name]);
    return file;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function deb(arch) {
  const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-deb-'));
  try {
    const root = join(work, 'root');
    await systemTree(arch, root, TEXTFILE_DIR.deb);
    // Node.js links its own zlib in, as nodejs.org builds it; the rest of lintian's findings are said in docs/development.md.
    mkdirSync(join(root, 'usr/share/lintian/overrides'), { recursive: true });
    writeFileSync(
      join(root, 'usr/share/lintian/overrides/gpu-textfile'),
      'gpu-textfile: embedded-library zlib [usr/lib/gpu-textfile/node/bin/node]\n',
    );
    const changelog = join(root, 'usr/share/doc/gpu-textfile/changelog.gz');
    writeFileSync(
      changelog.slice(0, -3),
      `gpu-textfile (${VERSION}) unstable; urgency=medium\n\n  * Packaged by scripts/package.mjs.\n\n -- gpu-textfile <gpu-textfile@users.noreply.github.com>  Tue, 01 Dec 2026 00:00:00 +0000\n`,
    );
    run('gzip', ['-9n', changelog.slice(0, -3)]);
    mkdirSync(join(root, 'DEBIAN'));
    const size = Number(run('du', ['-sk', '--exclude=DEBIAN', root]).toString().split('\t')[0]);
    writeFileSync(join(root, 'DEBIAN/control'), debControl({ version: VERSION, arch: DEB_ARCH[arch], installedSize: size }));
    writeFileSync(join(root, 'DEBIAN/conffiles'), '/etc/default/gpu-textfile\n');
    for (const [name, text] of Object.entries(debScripts(STARTED, [...UNITS, ...CONFIG_UNITS], TEXTFILE_DIR.deb))) {
      writeFileSync(join(root, 'DEBIAN', name), text);
      chmodSync(join(root, 'DEBIAN', name), 0o755);
    }
    const sums = run('sh', ['-c', "find . -path ./DEBIAN -prune -o -type f -print0 | sort -z | xargs -0 md5sum | sed 's|  \\./|  |'"], {
      cwd: root,
    });
    writeFileSync(join(root, 'DEBIAN/md5sums'), sums);
    const file = join(OUT, `gpu-textfile_${VERSION}_${DEB_ARCH[arch]}.deb`);
    run('dpkg-deb', ['--root-owner-group', `-Z${values.fast ? 'gzip' : 'xz'}`, '--build', root, file]);
    return file;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function rpm(arch) {
  const work = mkdtempSync(join(tmpdir(), 'gpu-textfile-rpm-'));
  try {
    const stage = join(work, 'stage');
    await systemTree(arch, stage, TEXTFILE_DIR.rpm);
    // Whole directories where the package owns them, so that erasing it leaves none behind.
    const files = [
      LIB,
      '/usr/bin/gpu-textfile',
      ...[...UNITS, ...CONFIG_UNITS].map((name) => `${UNIT_DIR}/${name}`),
      GENERATOR,
      '/etc/default/gpu-textfile',
      '/usr/share/doc/gpu-textfile',
    ];
    const spec = rpmSpec({
      version: VERSION,
      stage,
      files,
      dirs: [TEXTFILE_DIR.rpm],
      started: STARTED,
      units: [...UNITS, ...CONFIG_UNITS],
      textfileDir: TEXTFILE_DIR.rpm,
    });
    writeFileSync(join(work, 'gpu-textfile.spec'), spec);
    run('rpmbuild', [
      '-bb',
      '--quiet',
      '--target',
      `${RPM_ARCH[arch]}-linux`,
      '--define',
      `_topdir ${work}/top`,
      '--define',
      `_binary_payload w${values.fast ? '1.gzdio' : '6.xzdio'}`,
      join(work, 'gpu-textfile.spec'),
    ]);
    const built = join(work, 'top/RPMS', RPM_ARCH[arch], `gpu-textfile-${VERSION}-1.${RPM_ARCH[arch]}.rpm`);
    const file = join(OUT, `gpu-textfile-${VERSION}-1.${RPM_ARCH[arch]}.rpm`);
    cpSync(built, file);
    return file;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

// dist/ as `npm run build` made it: `npm run package` builds first.
if (!existsSync(join(ROOT, 'dist/gpu-textfile.js'))) {
  console.error('package: no dist/: run npm run build first (npm run package does)');
  process.exit(2);
}
const makers = { tar: tarball, deb, rpm };
for (const [option, list, known] of [
  ['--arch', values.arch, Object.keys(DEB_ARCH)],
  ['--format', values.format, Object.keys(makers)],
])
  for (const item of list)
    if (!known.includes(item)) {
      console.error(`package: ${option} ${item}: one of ${known.join(', ')}\n${USAGE}`);
      process.exit(2);
    }
mkdirSync(OUT, { recursive: true });
const NAMES = { tar: 'tarball', deb: '.deb', rpm: '.rpm' };
try {
  for (const arch of values.arch) {
    for (const format of values.format) {
      step(`${arch}: ${NAMES[format]}${format === 'tar' || values.fast ? '' : ' (xz: a minute or more)'}`);
      console.log(await makers[format](arch));
    }
  }
} finally {
  for (const { work } of runtimeBuilds.values()) rmSync(work, { recursive: true, force: true });
}
