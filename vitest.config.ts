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
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
