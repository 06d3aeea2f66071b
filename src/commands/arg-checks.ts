import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseDuration } from './duration.js';

// Checks of archive's, report's and pulse's options made before any work starts: each answers with the one
// line that says what is wrong (exit 2), or undefined.

/** A directory option that names nothing. Any other trouble (not a directory, EACCES) is left to the command, which names it. */
export async function directoryProblem(option: string, path: string): Promise<string | undefined> {
  const missing = await stat(path).then(
    () => false,
    (error: NodeJS.ErrnoException) => error.code === 'ENOENT',
  );
  return missing ? `--${option}: ${path} does not exist` : undefined;
}

/** archive: the directory exists, and --keep 0 is refused: it would delete every archive, the one just made too. */
export async function archiveArgsProblem(args: { csvDir: string; keep: number }): Promise<string | undefined> {
  if (args.keep === 0) return '--keep 0 would delete every archive, the one just made too: keep at least 1';
  return directoryProblem('csv-dir', args.csvDir);
}

/** report: each directory exists and is named once (twice would count its rows twice), and the span is not empty. */
export async function reportArgsProblem(
  args: { csvDirs: readonly string[] },
  since: number | undefined,
  until: number | undefined,
): Promise<string | undefined> {
  if (since !== undefined && until !== undefined && since >= until) {
    return `--since (${new Date(since).toISOString()}) is not before --until (${new Date(until).toISOString()}): no time is left to report on`;
  }
  const seen = new Set<string>();
  for (const dir of args.csvDirs) {
    const problem = await directoryProblem('csv-dir', dir);
    if (problem) return problem;
    const real = await realpath(dir).catch(() => resolve(dir));
    for (const other of seen)
      if (real === other || real.startsWith(`${other}/`) || other.startsWith(`${real}/`))
        return `--csv-dir: ${dir} is named twice, or inside another --csv-dir (its rows would count twice)`;
    seen.add(real);
  }
  return undefined;
}

/**
 * pulse: --seconds is a positive number (yargs reads "abc" as NaN, which ran and failed later; 0
 * and -5 gave a verdict on nothing), --timeout a duration. Returns the deadline, or the one line.
 */
export function pulseTimingProblem(args: { seconds: number; timeout: string }): { timeoutMs: number } | string {
  // A day at most: beyond 2^31 ms Node's timers fire at once (a TimeoutOverflowWarning), and no look is that long.
  if (!Number.isFinite(args.seconds) || args.seconds <= 0 || args.seconds > 86_400)
    return `--seconds: "${args.seconds}" must be a number of seconds above 0, at most 86400`;
  const timeoutMs = parseDuration(args.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) return `--timeout: "${args.timeout}" is not a duration (use 10, 10s or 500ms)`;
  return { timeoutMs };
}
