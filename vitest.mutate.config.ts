import { defineConfig } from 'vitest/config';

/**
 * The fast unit tests of the modules `npm run mutate` mutates (stryker.config.mjs): each mutant runs the
 * tests that cover it, so end-to-end, boot, packaging and CLI-only files, which test the built bundle in
 * child processes (where no mutant is active) and take minutes, are left out. Mixed files stay: their
 * CLI tests read the dist/ that `npm run mutate` builds first, and kill nothing, but pass.
 */
export default defineConfig({
  test: {
    include: [
      'test/fields.test.ts',
      'test/metrics.test.ts',
      'test/golden-values.test.ts',
      'test/safe-fs.test.ts',
      'test/state.test.ts',
      'test/exposition/**/*.test.ts',
      'test/sources/nvidia-smi/{cells,compute-apps,failure,help-query-gpu,lines,query-gpu,rows,series-csv,source}.test.ts',
      'test/publish/**/*.test.ts',
      'test/csvlog/**/*.test.ts',
      'test/locks/**/*.test.ts',
      'test/doctor/checks/**/*.test.ts',
      'test/doctor/parsers.test.ts',
    ],
    update: 'none',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
