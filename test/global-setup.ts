import { execFileSync } from 'node:child_process';

/** The CLI tests run the bundle users install: build it once before any test file. */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
}
