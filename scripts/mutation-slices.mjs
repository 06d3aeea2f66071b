// The slices `npm run mutate -- <slice>` runs: a module group and the tests that mirror it (test/ mirrors src/),
// and the vitest pool Stryker runs them in where threads (its default) will not do.
// Each mutant runs only the tests that reach it (perTest coverage), but a test that reaches it and also starts
// the CLI costs seconds per mutant: keeping each group to its own tests keeps a slice within the hour.
export const SLICES = {
  parsers: {
    mutate: ['src/sources/nvidia-smi/{rows,query-gpu,cells,lines,compute-apps,failure,series-csv}.ts'],
    tests: [
      'test/sources/nvidia-smi/{cells,compute-apps,failure,lines,query-gpu,rows,series-csv,source}.test.ts',
      'test/metrics/golden-values.test.ts',
    ],
  },
  fields: {
    mutate: [
      'src/fields/fields.ts',
      'src/fields/field-spec.ts',
      'src/fields/field-select.ts',
      'src/metrics/metrics.ts',
      'src/metrics/metrics-labels.ts',
      'src/collection.ts',
    ],
    tests: [
      'test/fields/fields.test.ts',
      'test/collection.test.ts',
      'test/metrics/metrics.test.ts',
      'test/metrics/golden-values.test.ts',
      'test/sources/nvidia-smi/{query-gpu,rows,source}.test.ts',
    ],
  },
  exposition: {
    mutate: ['src/exposition/**/*.ts'],
    tests: ['test/exposition/**/*.test.ts', 'test/metrics/metrics.test.ts', 'test/metrics/golden-values.test.ts'],
  },
  publish: { mutate: ['src/publish/**/*.ts'], tests: ['test/publish/**/*.test.ts', 'test/files/write-faults.test.ts'] },
  csvlog: {
    mutate: ['src/csvlog/**/*.ts'],
    // read.ts is the report's reader: the report's aggregation tests read through it (build.test.ts, slower, adds little).
    tests: ['test/csvlog/**/*.test.ts', 'test/files/write-faults.test.ts', 'test/report/aggregate.test.ts'],
  },
  // csvlog's reader alone, with its own tests: minutes instead of csvlog's quarter hour, while working on read.ts.
  'csvlog-read': { mutate: ['src/csvlog/read.ts'], tests: ['test/csvlog/read.test.ts'] },
  locks: {
    mutate: ['src/locks/**/*.ts'],
    tests: ['test/locks/**/*.test.ts', 'test/files/write-faults.test.ts'],
    // A test takes a lock as another user (process.seteuid), which Node allows in a main thread only.
    pool: 'forks',
  },
  doctor: { mutate: ['src/doctor/checks/**/*.ts'], tests: ['test/doctor/checks/**/*.test.ts', 'test/doctor/parsers.test.ts'] },
};
