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
  banner: { js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});
chmodSync('dist/gpu-textfile.js', 0o755);
