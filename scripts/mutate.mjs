// `npm run mutate [-- slice...]`: Stryker over the core modules (stryker.config.mjs), or one slice at a time
// (scripts/mutation-slices.mjs: a module group and its own tests), as a busy two-core machine needs; the
// report lands in reports/mutation/<slice>.html and .json, the score on the last line.
//
// Stryker is pinned to 9.x, whose packages (and Babel 7 under them) accept Node.js 20: 10.x and Babel 8
// want 22+, and `npm ci` on 20 printed a page of EBADENGINE for them (issue 39; test/packaging/dev-engines).
// One thing keeps this from being a plain `stryker run`: Stryker copies the tree into its sandbox with
// copyFile, which follows links, and the host fixtures hold links as sysfs does (some dangling on purpose).
// So the tree is copied here with tar (links kept) and mutated in place there, never in the checkout.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Stryker } from '../node_modules/@stryker-mutator/core/dist/src/stryker.js';
import { SLICES } from './mutation-slices.mjs';
import config from '../stryker.config.mjs';

const root = resolve(import.meta.dirname, '..');
const tree = join(root, '.stryker-tmp', 'tree');
rmSync(tree, { recursive: true, force: true, maxRetries: 5 });
mkdirSync(tree, { recursive: true });
const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root })
  .toString()
  .split('\0')
  .filter((file) => file !== '' && file !== 'node_modules');
execFileSync('sh', ['-c', `tar -c --null -T - dist | tar -x -C '${tree}'`], { cwd: root, input: files.join('\0') });
symlinkSync(join(root, 'node_modules'), join(tree, 'node_modules'));
process.chdir(tree);

const names = process.argv.slice(2);
const unknown = names.filter((name) => !(name in SLICES));
if (unknown.length > 0) {
  console.error(`unknown slice ${unknown.join(', ')}; slices: ${Object.keys(SLICES).join(', ')}`);
  process.exit(2);
}
for (const name of names.length > 0 ? names : ['all']) {
  const slice = SLICES[name];
  // vitest.mutate.config.ts runs these tests only.
  if (slice) process.env.MUTATE_TESTS = JSON.stringify(slice.tests);
  const report = join(root, 'reports', 'mutation', name);
  const stryker = new Stryker({
    configFile: 'stryker.config.mjs',
    inPlace: true,
    htmlReporter: { fileName: `${report}.html` },
    jsonReporter: { fileName: `${report}.json` },
    // A rerun after new tests only runs the mutants and tests that changed.
    incremental: true,
    incrementalFile: `${report}.incremental.json`,
    ...(slice ? { mutate: slice.mutate } : {}),
    ...(slice?.pool ? { vitest: { ...config.vitest, pool: slice.pool } } : {}),
  });
  const results = await stryker.runMutationTest();
  const detected = results.filter((m) => m.status === 'Killed' || m.status === 'Timeout').length;
  const valid = results.filter((m) => ['Killed', 'Timeout', 'Survived', 'NoCoverage'].includes(m.status)).length;
  console.log(`${name}: mutation score ${valid === 0 ? 'n/a' : ((100 * detected) / valid).toFixed(2)} % (${detected} of ${valid})`);
}
