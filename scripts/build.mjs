// Bundles the CLI into dist/: one entry file for the command, one chunk per lazily imported command,
// so `collect` parses and loads only what it needs.
import { build } from 'esbuild';
import { rmSync, chmodSync } from 'node:fs';

rmSync('dist', { recursive: true, force: true });
await build({
  entryPoints: { 'gpu-textfile': 'src/cli.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Bundled CommonJS dependencies (write-file-atomic, yargs' helpers) expect require and __filename.
  banner: {
    js: [
      '#!/usr/bin/env node',
      "import { createRequire as __createRequire } from 'node:module';",
      "import { fileURLToPath as __fileURLToPath } from 'node:url';",
      'const require = __createRequire(import.meta.url);',
      'const __filename = __fileURLToPath(import.meta.url);',
    ].join('\n'),
  },
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});
chmodSync('dist/gpu-textfile.js', 0o755);
