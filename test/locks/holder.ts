// A second process for the lock tests: takes the lock named on its command line, says "held" (or
// what it got instead), and keeps it until its stdin closes. Bundled by the test with esbuild.
import { tryLock } from '../../src/locks/file-lock.js';

const lock = await tryLock(process.argv[2]!);
process.stdout.write(`${lock.kind}\n`);
if (lock.kind === 'held') {
  process.stdin.resume();
  process.stdin.on('end', () => void lock.release().then(() => process.exit(0)));
}
