import { defineConfig } from 'vitest/config';
import { SLICES } from './scripts/mutation-slices.mjs';

/** A slice's own tests (scripts/mutation-slices.mjs), set by scripts/mutate.mjs; every slice's without one. */
const sliceTests: string[] | undefined = process.env.MUTATE_TESTS ? JSON.parse(process.env.MUTATE_TESTS) : undefined;

/**
 * The fast unit tests of the modules `npm run mutate` mutates (stryker.config.mjs): each mutant runs the
 * tests that cover it, so end-to-end, boot, packaging and CLI-only files, which test the built bundle in
 * child processes (where no mutant is active) and take minutes, are left out. Mixed files stay: their
 * CLI tests read the dist/ that `npm run mutate` builds first, and kill nothing, but pass.
 */
export default defineConfig({
  test: {
    include: sliceTests ?? [...new Set(Object.values(SLICES).flatMap((slice) => slice.tests))],
    update: 'none',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
