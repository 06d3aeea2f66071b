import { execFileSync } from 'node:child_process';
import { buildStandIn } from './nvml-stand-in.js';

/** The CLI tests run the bundle users install: build it once before any test file; and the NVML stand-in. */
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
  buildStandIn();
}
