// Mutation testing of the core modules (issue 22): `npm run mutate`, not in CI (tens of minutes on two cores).
// Scores and the surviving mutants kept on purpose: docs/development.md. One slice at a time:
//   npm run mutate -- csvlog        (slices: scripts/mutation-slices.mjs)
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts', related: false },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: [
    'src/fields/fields.ts',
    'src/fields/field-spec.ts',
    'src/fields/field-select.ts',
    'src/sources/nvidia-smi/{rows,query-gpu,cells,lines,compute-apps,failure,series-csv}.ts',
    'src/exposition/**/*.ts',
    'src/publish/**/*.ts',
    'src/csvlog/**/*.ts',
    'src/locks/**/*.ts',
    'src/doctor/checks/**/*.ts',
    'src/metrics/metrics.ts',
    'src/collection.ts',
  ],
  // Only the tests that reach a mutant run for it.
  coverageAnalysis: 'perTest',
  // A static mutant (in a module-level table such as fields.ts) would need every test for each one;
  // the field table is checked whole by test/fields/fields.test.ts and the goldens instead.
  ignoreStatic: true,
  // Two cores, shared with other work: two mutants at a time at most.
  concurrency: 2,
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  // dist/ is copied into the sandbox for the CLI tests of mixed files; the reports never are.
  ignorePatterns: ['reports', '.device', 'coverage'],
};
