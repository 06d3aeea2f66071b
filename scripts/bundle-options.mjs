// What scripts/build.mjs (dist/) and scripts/snapshot.mjs (the packaged program's startup snapshot)
// bundle alike: the same modules kept apart, loaded by require() of their own files, and the same options.
import { resolve } from 'node:path';

/** Modules imported dynamically that stay out of cli.js: source path -> output name. */
export const SEPARATE = {
  'src/commands/archive.ts': 'archive',
  'src/commands/doctor.ts': 'doctor',
  'src/commands/report.ts': 'report',
  'src/commands/export.ts': 'export',
  'src/commands/pulse.ts': 'pulse',
  'src/commands/install.ts': 'install',
  // run's job runner and GPU reader: a sixth of cli.js, which every collect reads and compiles.
  'src/commands/run.ts': 'run',
  'src/doctor/quick.ts': 'doctor-quick',
  // NVML through koffi: loaded by collect --source nvml only.
  'src/sources/nvml/source.ts': 'nvml',
};
/** yargs, whose only export is its default: see the footer scripts/build.mjs gives its bundle. */
export const YARGS = 'node_modules/yargs/index.mjs';
const outputOf = new Map([...Object.entries(SEPARATE), [YARGS, 'yargs']].map(([source, name]) => [resolve(source), `./${name}.js`]));

/** A dynamic import of a separate module becomes a require() of its own file. */
export const separateFiles = {
  name: 'separate-files',
  setup(bundle) {
    bundle.onResolve({ filter: /.*/ }, async (args) => {
      if (args.kind !== 'dynamic-import' || args.pluginData?.resolving) return undefined;
      const resolved = await bundle.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        importer: args.importer,
        pluginData: { resolving: true },
      });
      const output = outputOf.get(resolved.path);
      return output ? { path: output, external: true } : undefined;
    });
  },
};

/** esbuild's options every bundle of dist/ shares: CommonJS for Node.js 20, `version` as the CLI's --version. */
export const bundleOptions = (version) => ({
  outdir: 'dist',
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // import() becomes require(): the launcher runs cli.js as a script, which has no module loader for it.
  supported: { 'dynamic-import': false },
  // yargs finds its files from import.meta.url, which CommonJS lacks; and package.json from the
  // working directory: the version is set here instead, so --version answers from anywhere.
  define: { 'import.meta.url': '__importMetaUrl', PACKAGE_VERSION: JSON.stringify(version) },
  banner: { js: "var __importMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  logLevel: 'warning',
});
