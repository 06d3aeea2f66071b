import { describe, expect, it } from 'vitest';
import { parseWithYargs } from '../../src/cli.js';
import { COLLECT_OPTIONS } from '../../src/commands/options.js';
import { parseOptions, splitList } from '../../src/commands/parse-options.js';

/** What the CLI's yargs path (help, every other command) makes of the same table, camelCase keys only (as the commands read them). */
async function viaYargs(args: string[], env: Record<string, string>): Promise<Record<string, unknown>> {
  const argv = await parseWithYargs('collect', args, env);
  return Object.fromEntries(Object.entries(argv).filter(([key]) => key !== '_' && key !== '$0' && !key.includes('-')));
}

const cases: [string[], Record<string, string>][] = [
  [[], {}],
  [['--dry-run', '--textfile-dir', '/srv/tf', '--timeout=3s'], {}],
  [['--no-processes', '--max-processes', '5'], {}],
  [['--label', 'a=b', '--label', 'c=d', '--exclude-fields', 'ecc.*'], {}],
  [['--interval', '250ms', '--processes-interval', '30s', '--csv-dir', '/var/log/x', '--task', 't1'], {}],
  [
    [],
    {
      GPU_TEXTFILE_TEXTFILE_DIR: '/env/tf',
      GPU_TEXTFILE_PROCESSES: 'false',
      GPU_TEXTFILE_MAX_PROCESSES: '7',
      GPU_TEXTFILE_LABEL: 'site=x',
    },
  ],
  [['--textfile-dir', '/cli/wins'], { GPU_TEXTFILE_TEXTFILE_DIR: '/env/loses' }],
  [['--processes=false', '--dry-run=true'], {}],
  // Lists in one variable: commas or white space separate items.
  [[], { GPU_TEXTFILE_LABEL: 'env=prod site=x', GPU_TEXTFILE_EXCLUDE_FIELDS: 'ecc* power*' }],
  [[], { GPU_TEXTFILE_LABEL: 'env=prod,site=x, rack=3\t', GPU_TEXTFILE_EXCLUDE_FIELDS: ',ecc*,,' }],
  [['--label', 'cli=wins'], { GPU_TEXTFILE_LABEL: 'env=prod site=x' }],
  [[], { GPU_TEXTFILE_LABEL: '' }],
];

describe("collect's fast option parser", () => {
  it.each(cases)('reads %j %j as yargs does (with GPU_TEXTFILE_* read by the same rules)', async (args, env) => {
    expect(parseOptions(COLLECT_OPTIONS, args, env)).toEqual(await viaYargs(args, env));
  });
  it('splits a list variable at commas and white space', () => {
    expect(
      parseOptions(COLLECT_OPTIONS, [], { GPU_TEXTFILE_LABEL: 'env=prod site=x', GPU_TEXTFILE_EXCLUDE_FIELDS: 'ecc*, power*' }),
    ).toMatchObject({
      label: ['env=prod', 'site=x'],
      excludeFields: ['ecc*', 'power*'],
    });
    expect(splitList(' a,b\n c ,, ')).toEqual(['a', 'b', 'c']);
  });
  it.each([
    [['--bogus'], 'Unknown argument: bogus'],
    [['positional'], 'Unknown argument: positional'],
    [['--max-processes', 'many'], '--max-processes: "many" is not a number'],
    [['--timeout'], 'Not enough arguments following: timeout'],
  ])('rejects %j', (args, message) => expect(parseOptions(COLLECT_OPTIONS, args, {})).toBe(message));
  it('names the variable a bad value came from', () => {
    expect(parseOptions(COLLECT_OPTIONS, [], { GPU_TEXTFILE_MAX_PROCESSES: 'many' })).toBe(
      'GPU_TEXTFILE_MAX_PROCESSES: "many" is not a number',
    );
  });
});
