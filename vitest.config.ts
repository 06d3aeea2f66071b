import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Two cores here: end-to-end files start processes and servers of their own.
    fileParallelism: true,
    maxWorkers: 2,
    // A missing golden fails here as in CI, instead of being written: `vitest -u` writes goldens.
    update: 'none',
    // A deadline that catches a hang, not a speed check (speed is npm run bench's): the suite must pass
    // with every core busy beside it (npm run test:load), where a test takes five to ten times its
    // quiet time. A test that needs more declares it.
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
