// `npm ci` on the oldest Node.js that engines claims must not look failed: every package the lockfile
// installs, development tools included, accepts that Node.js and the ones the package is tested on
// (issue 39: Stryker 10 and Babel 8 wanted 22+ and printed 255 lines of EBADENGINE on 20.20).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/helpers.js';

type Version = [number, number, number];

const parse = (text: string): { version: Version; parts: number } => {
  const pieces = text
    .replace(/^v/, '')
    .split('.')
    .filter((piece) => piece !== '' && piece !== '*' && piece !== 'x');
  const numbers = pieces.map((piece) => Number.parseInt(piece, 10));
  return { version: [numbers[0] ?? 0, numbers[1] ?? 0, numbers[2] ?? 0], parts: numbers.length };
};

const compare = (a: Version, b: Version): number => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/** One comparator of an npm range ("^20.19.0", ">= 14", "6.*", "20"), as npm's semver reads it. */
function meets(found: Version, comparator: string): boolean {
  const match = /^(>=|<=|>|<|\^|~|=)?\s*(.+)$/.exec(comparator.trim());
  if (!match) throw new Error(`unreadable engines comparator "${comparator}"`);
  const [, op = '', rest = ''] = match;
  const { version, parts } = parse(rest);
  const order = compare(found, version);
  if (op === '>=') return order >= 0;
  if (op === '>') return order > 0;
  if (op === '<=') return order <= 0;
  if (op === '<') return order < 0;
  // "^20.19.0", "20", "6.*": the same major from that version up (0.x ranges never name a Node.js we run).
  if (op === '^' || ((op === '' || op === '=') && parts < 3)) return found[0] === version[0] && order >= 0;
  if (op === '~') return found[0] === version[0] && found[1] === version[1] && order >= 0;
  return order === 0;
}

/** Whether `found` satisfies an engines range: alternatives by "||", each a set of comparators. */
function satisfiesRange(found: Version, range: string): boolean {
  return range.split('||').some((alternative) => {
    const comparators = alternative
      .trim()
      .replace(/(>=|<=|>|<|\^|~|=)\s+/g, '$1')
      .split(/\s+/);
    return comparators.every((comparator) => comparator === '' || meets(found, comparator));
  });
}

const packageJson = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  runtimes: { tested: string[] };
};
const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[] }>;
};

describe('the lockfile against engines', () => {
  it('reads npm ranges as npm does', () => {
    expect(satisfiesRange([20, 19, 0], '^20.19.0 || >=22.12.0')).toBe(true);
    expect(satisfiesRange([20, 18, 9], '^20.19.0 || >=22.12.0')).toBe(false);
    expect(satisfiesRange([20, 19, 0], '>=22')).toBe(false);
    expect(satisfiesRange([20, 19, 0], '18 || 20 || >=22')).toBe(true);
    expect(satisfiesRange([21, 0, 0], '18 || 20 || >=22')).toBe(false);
    expect(satisfiesRange([20, 19, 0], '>=0.6.11 <=0.7.0 || >=0.7.3')).toBe(true);
    expect(satisfiesRange([20, 19, 0], '6.* || 8.* || >= 10.*')).toBe(true);
    expect(satisfiesRange([22, 18, 0], '^20.19.0 || ^22.13.0 || >=23.5.0')).toBe(true);
  });

  const oldest = packageJson.engines.node.replace(/^>=\s*/, '');
  it.each([oldest, ...packageJson.runtimes.tested])('every package installed accepts Node.js %s', (node) => {
    const found = parse(node).version;
    const refusing = Object.entries(lock.packages)
      .filter(([path]) => path !== '')
      .flatMap(([path, entry]) => {
        const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
        return range !== undefined && !satisfiesRange(found, range) ? [`${path} wants ${range}`] : [];
      });
    expect(refusing).toEqual([]);
  });
});
