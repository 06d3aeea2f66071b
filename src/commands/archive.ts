import { archiveDirectory } from '../csvlog/rotate.js';
import { REPORT_SIDECARS } from '../report/sidecar-sections.js';
import { parseDays } from './duration.js';
import { archiveArgsProblem } from './arg-checks.js';

import type { ARCHIVE_OPTIONS } from './options.js';
import type { ArgsOf } from './option-types.js';

export type ArchiveArgs = ArgsOf<typeof ARCHIVE_OPTIONS>;

/** `gpu-textfile archive`: rotate every live CSV in --csv-dir. Returns the exit status. */
export async function runArchive(args: ArchiveArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const say = (line: string) => io.err.write(`gpu-textfile: ${line}\n`);
  if (!Number.isInteger(args.keep) || args.keep < 0) {
    say('--keep must be a whole number');
    return 2;
  }
  const maxAgeDays = args.maxAge === undefined ? undefined : parseDays(args.maxAge);
  if (maxAgeDays === undefined && args.maxAge !== undefined) {
    say(`--max-age takes days (7) or a span (7d, 36h), not ${JSON.stringify(args.maxAge)}`);
    return 2;
  }
  const problem = await archiveArgsProblem(args);
  if (problem) {
    say(problem);
    return 2;
  }
  const result = await archiveDirectory(args.csvDir, {
    keep: args.keep,
    maxAgeDays,
    compress: args.compress,
    delayCompress: args.delayCompress,
    minSize: args.minSize,
    now: new Date(),
    sidecars: REPORT_SIDECARS,
  });
  if ('error' in result) {
    say(result.error);
    return 1;
  }
  let failed = false;
  for (const action of result.actions) {
    if (action.kind === 'rotated') io.out.write(`${action.task}.csv -> ${action.archive} (${action.rows} rows)\n`);
    if (action.kind === 'failed') {
      failed = true;
      say(`${action.task}.csv not rotated, left intact: ${action.message}`);
    }
  }
  for (const problem of result.problems) say(problem);
  return failed || result.problems.length > 0 ? 1 : 0;
}
