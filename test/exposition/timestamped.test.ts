import { describe, expect, it } from 'vitest';
import { familyHeader, formatEnd, seriesPrefix, timestampText, valueAt } from '../../src/exposition/timestamped.js';

// Written from the two specs, not from our own output. OpenMetrics 1.0: timestamps are seconds (a
// fraction allowed), a counter's TYPE names the family without `_total` (its samples carry it), HELP
// escapes \ " and line feed, the text ends in `# EOF`. Prometheus 0.0.4: timestamps are integer
// milliseconds, the family is named as its samples, HELP escapes \ and line feed only, no end mark.
const timestampCases: [title: string, format: 'openmetrics' | 'prometheus', ms: number, expected: string][] = [
  ['0: OpenMetrics, whole second', 'openmetrics', 1_767_225_600_000, '1767225600'],
  ['1: OpenMetrics, milliseconds as a fraction', 'openmetrics', 1_767_225_600_025, '1767225600.025'],
  ['2: Prometheus, milliseconds', 'prometheus', 1_767_225_600_025, '1767225600025'],
  ['3: Prometheus, whole second', 'prometheus', 1_767_225_600_000, '1767225600000'],
];

const headerCases: [
  title: string,
  format: 'openmetrics' | 'prometheus',
  family: { name: string; type: 'gauge' | 'counter'; help: string },
  expected: string,
][] = [
  ['0: OpenMetrics gauge', 'openmetrics', { name: 'a_ratio', type: 'gauge', help: 'A.' }, '# HELP a_ratio A.\n# TYPE a_ratio gauge\n'],
  [
    '1: OpenMetrics counter: family without _total',
    'openmetrics',
    { name: 'a_total', type: 'counter', help: 'A.' },
    '# HELP a A.\n# TYPE a counter\n',
  ],
  [
    '2: Prometheus counter: family as its samples',
    'prometheus',
    { name: 'a_total', type: 'counter', help: 'A.' },
    '# HELP a_total A.\n# TYPE a_total counter\n',
  ],
  [
    '3: OpenMetrics HELP escapes a quote',
    'openmetrics',
    { name: 'a', type: 'gauge', help: 'say "x"\\' },
    '# HELP a say \\"x\\"\\\\\n# TYPE a gauge\n',
  ],
  [
    '4: Prometheus HELP leaves a quote',
    'prometheus',
    { name: 'a', type: 'gauge', help: 'say "x"\\' },
    '# HELP a say "x"\\\\\n# TYPE a gauge\n',
  ],
];

describe('timestampText', () => {
  it.each(timestampCases)('%s', (_, format, ms, expected) => expect(timestampText(format, ms)).toBe(expected));
});
describe('familyHeader', () => {
  it.each(headerCases)('%s', (_, format, family, expected) => expect(familyHeader(format, family)).toBe(expected));
});
describe('a sample line', () => {
  it('name, escaped labels, value, timestamp', () =>
    expect(
      seriesPrefix('a_ratio', [
        ['host', 'x"y'],
        ['gpu', '0'],
      ]) + valueAt(0.57, '1767225600.025'),
    ).toBe('a_ratio{host="x\\"y",gpu="0"} 0.57 1767225600.025\n'));
  it('no labels: no braces', () => expect(seriesPrefix('a', []) + valueAt(Number.NaN, '1')).toBe('a NaN 1\n'));
});
describe('formatEnd', () => {
  it('OpenMetrics ends in # EOF', () => expect(formatEnd('openmetrics')).toBe('# EOF\n'));
  it('Prometheus has no end mark', () => expect(formatEnd('prometheus')).toBe(''));
});
