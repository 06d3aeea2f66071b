import { describe, expect, it } from 'vitest';
import { checkExposition, checkFamilies } from '../../src/exposition/check.js';

const ok = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 1\na_total{x="2"} 2\n# HELP b B.\n# TYPE b gauge\nb 3\n';

const broken: [title: string, text: string, problem: RegExp][] = [
  ['no final newline', ok.slice(0, -1), /final newline/],
  ['second HELP', `${ok}# HELP b again\n`, /second HELP/],
  ['family split in two', `${ok}a_total{x="3"} 3\n`, /not contiguous/],
  ['duplicate series', `${ok}b 4\n`, /duplicate series/],
  ['label names differ in a family', '# TYPE c gauge\nc{x="1"} 1\nc{y="1"} 1\n', /has labels/],
  ['timestamp', '# TYPE c gauge\nc 1 1700000000000\n', /timestamp/],
  ['bad escape', '# TYPE c gauge\nc{x="a\\tb"} 1\n', /invalid escape/],
  ['raw newline in a value breaks the line', '# TYPE c gauge\nc{x="a\nb"} 1\n', /unterminated|not a sample|no value/],
  ['not a number', '# TYPE c gauge\nc one\n', /invalid value/],
  ['empty line', `${ok}\n`, /empty line/],
];

describe('checkExposition', () => {
  it('accepts valid text and reads its samples back', () => {
    const result = checkExposition(ok);
    expect(result.problems).toEqual([]);
    expect(result.samples).toEqual([
      { name: 'a_total', labels: { x: '1' }, value: 1 },
      { name: 'a_total', labels: { x: '2' }, value: 2 },
      { name: 'b', labels: {}, value: 3 },
    ]);
  });
  it('unescapes label values', () => {
    const result = checkExposition('# TYPE c gauge\nc{x="q\\"b\\\\n\\n"} 1\n');
    expect(result.samples[0]?.labels.x).toBe('q"b\\n\n');
  });
  it.each(broken)('finds: %s', (_, text, problem) => {
    expect(checkExposition(text).problems.join('\n')).toMatch(problem);
  });
});

describe('checkFamilies', () => {
  const family = (name: string, ...samples: [string, string][][]) => ({ name, samples: samples.map((labels) => ({ labels })) });
  it('accepts what render may render', () => {
    expect(checkFamilies([family('a', [['gpu', '0']], [['gpu', '1']]), family('b', [])])).toEqual([]);
  });
  it.each([
    ['a family twice', [family('a', [['gpu', '0']]), family('a', [['gpu', '1']])], /family a twice/],
    ['duplicate series', [family('a', [['gpu', '0']], [['gpu', '0']])], /duplicate series a\{gpu="0"\}/],
    ['label sets differ', [family('a', [['gpu', '0']], [['uuid', 'x']])], /a has labels \{uuid\} and \{gpu\}/],
    ['invalid metric name', [family('a-b', [])], /invalid metric name a-b/],
    ['reserved label name', [family('a', [['__x', '1']])], /invalid label name __x/],
  ] as const)('finds %s', (_, families, problem) => expect(checkFamilies(families).join('\n')).toMatch(problem));
});
