import yargs from 'yargs';
import { describe, expect, it } from 'vitest';
import { COLLECT_OPTIONS } from '../../src/commands/options.js';
import { parseOptions } from '../../src/commands/parse-options.js';

/** What yargs makes of the same table, with camelCase keys only (as the commands read them). */
async function viaYargs(args: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const argv = await yargs(args).options(COLLECT_OPTIONS).env('GPU_TEXTFILE').strict().fail((message) => { throw new Error(message); }).parseAsync();
    return Object.fromEntries(Object.entries(argv).filter(([key]) => key !== '_' && key !== '$0' && !key.includes('-')));
  } finally {
    for (const key of Object.keys(env)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

const cases: [string[], Record<string, string>][] = [
  [[], {}],
  [['--dry-run', '--textfile-dir', '/srv/tf', '--timeout=3s'], {}],
  [['--no-processes', '--max-processes', '5'], {}],
  [['--label', 'a=b', '--label', 'c=d', '--exclude-fields', 'ecc.*'], {}],
  [['--interval', '250ms', '--processes-interval', '30s', '--csv-dir', '/var/log/x', '--task', 't1'], {}],
  [[], { GPU_TEXTFILE_TEXTFILE_DIR: '/env/tf', GPU_TEXTFILE_PROCESSES: 'false', GPU_TEXTFILE_MAX_PROCESSES: '7', GPU_TEXTFILE_LABEL: 'site=x' }],
  [['--textfile-dir', '/cli/wins'], { GPU_TEXTFILE_TEXTFILE_DIR: '/env/loses' }],
  [['--processes=false', '--dry-run=true'], {}],
];

describe('collect\'s fast option parser', () => {
  it.each(cases)('reads %j %j as yargs does', async (args, env) => {
    expect(parseOptions(COLLECT_OPTIONS, args, env)).toEqual(await viaYargs(args, env));
  });
  it.each([
    [['--bogus'], 'Unknown argument: bogus'],
    [['positional'], 'Unknown argument: positional'],
    [['--max-processes', 'many'], '--max-processes: "many" is not a number'],
    [['--timeout'], 'Not enough arguments following: timeout'],
  ])('rejects %j', (args, message) => expect(parseOptions(COLLECT_OPTIONS, args, {})).toBe(message));
});
