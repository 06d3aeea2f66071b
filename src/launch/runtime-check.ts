// The first thing the command does: refuse, in one line, a Node.js it was not built for. Ubuntu 22.04
// ships 12.22, Ubuntu 24.04 and Debian 12 ship 18: there the bundled yargs would die with a stack trace
// that names neither the version needed nor the one found. This file is bundled into the launcher,
// which esbuild builds for an old target (scripts/build.mjs) so that it parses on those runtimes too.

/** The `engines.node` range of package.json, ">=MAJOR.MINOR[.PATCH]", set by the build. */
declare const NODE_ENGINES: string;

const numbers = (version: string): number[] =>
  version
    .replace(/^[v>=\s]+/, '')
    .split('.')
    .map((part) => Number.parseInt(part, 10) || 0);

/** Whether `found` ("v22.3.0") is at least the minimum of `range` (">=20.19"), part by part. */
export function satisfies(found: string, range: string): boolean {
  const have = numbers(found);
  const need = numbers(range);
  for (let i = 0; i < 3; i++) {
    const a = have[i] ?? 0;
    const b = need[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

/** The one line said on an unsupported runtime, or undefined when `found` is supported. */
export function runtimeProblem(found: string, range: string, execPath: string): string | undefined {
  if (satisfies(found, range)) return undefined;
  return `gpu-textfile: needs Node.js ${range}, found ${found} (${execPath})`;
}

/** Says the problem and exits 1 before anything that needs a newer Node.js is loaded. */
export function exitIfUnsupported(): void {
  const problem = runtimeProblem(process.version, NODE_ENGINES, process.execPath);
  if (problem === undefined) return;
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
