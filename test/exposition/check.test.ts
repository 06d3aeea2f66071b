import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkExposition, checkFamilies, expositionProblems, readsAsRendered, sameSeries } from '../../src/exposition/check.js';

const GOLDEN = join(import.meta.dirname, '../golden');

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

/** Each rule alone, with the whole list of problems it gives, line numbers and all. */
const exact: [title: string, text: string, problems: string[]][] = [
  ['a plain comment is no problem', '# a comment\n# TYPE c gauge\nc 1\n', []],
  ['no text, no problem', '', []],
  ['a label twice', '# TYPE c gauge\nc{x="1",x="2"} 1\n', ['line 2: label x twice']],
  ['labels without a comma', '# TYPE c gauge\nc{x="1" y="2"} 1\n', ['line 2: expected , or } after label x']],
  ['a malformed label set', '# TYPE c gauge\nc{x=1} 1\n', ['line 2: malformed label set']],
  ['a bad escape, named', '# TYPE c gauge\nc{x="a\\tb"} 1\n', ['line 2: invalid escape \\t in a label value']],
  ['an invalid name in HELP', '# HELP 1c C.\n', ['line 1: invalid metric name 1c']],
  ['an unknown type', '# TYPE c gaug\n', ['line 1: unknown type gaug']],
  ['TYPE after the samples', 'c 1\n# TYPE c gauge\n', ['line 2: TYPE after samples of c']],
  ['HELP after the samples is allowed', '# TYPE c gauge\nc 1\n# HELP c C.\n', []],
  ['not a sample', '# TYPE c gauge\n{x="1"} 1\n', ['line 2: not a sample: {x="1"} 1']],
  ['no value', '# TYPE c gauge\nc\nc{x="1"}\n', ['line 2: no value', 'line 3: no value']],
  ['a value glued to the name', '# TYPE c gauge\nc1\n', ['line 2: no value']],
  ['a reserved label name', '# TYPE c gauge\nc{__x="1"} 1\n', ['line 2: invalid label name __x']],
  ['a label name ending in __ is fine', '# TYPE c gauge\nc{x__="1"} 1\n', []],
  [
    'labels in another order are the same series',
    '# TYPE c gauge\nc{x="1",y="2"} 1\nc{y="2",x="1"} 2\n',
    ['line 3: duplicate series c{y="2",x="1"}'],
  ],
  ['a second TYPE', '# TYPE c gauge\n# TYPE c gauge\nc 1\n', ['line 2: second TYPE for c']],
  [
    'a family split by another',
    '# TYPE c gauge\nc 1\n# TYPE d gauge\nd 1\nc{x="2"} 2\n',
    ['line 5: family c is not contiguous', 'line 5: c has labels {x} here and {} before'],
  ],
];

describe('checkExposition', () => {
  it.each(exact)('%s', (_, text, problems) => expect(checkExposition(text).problems).toEqual(problems));
  it('reads +Inf, -Inf and NaN, and a value after more than one space', () => {
    const result = checkExposition('# TYPE c gauge\nc{x="a"} +Inf\nc{x="b"} -Inf\nc{x="c"} NaN\nc{x="d"}   2\n');
    expect(result.problems).toEqual([]);
    expect(result.samples.map((s) => s.value)).toEqual([Infinity, -Infinity, Number.NaN, 2]);
  });
  it('counts histogram series (_bucket, _sum, _count) in their family', () => {
    const text = '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\n# TYPE g gauge\ng 1\n';
    expect(checkExposition(`${text}h_bucket{le="2"} 1\n`).problems).toEqual(['line 6: family h is not contiguous']);
    expect(checkExposition(`${text}# TYPE h histogram\n`).problems).toEqual([
      'line 6: family h is not contiguous',
      'line 6: second TYPE for h',
      'line 6: TYPE after samples of h',
    ]);
  });
  it('says where a HELP and TYPE were read', () => {
    const result = checkExposition('# HELP c What c is.\n# TYPE c counter\nc 1\n');
    expect([...result.help]).toEqual([['c', 'What c is.']]);
    expect([...result.types]).toEqual([['c', 'counter']]);
  });
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

describe('sameSeries', () => {
  const gpu0: [string, string][] = [['gpu', '0']];
  const gpu1: [string, string][] = [['gpu', '1']];
  const checked = [
    { name: 'a', samples: [{ labels: gpu0 }, { labels: gpu1 }] },
    { name: 'b', samples: [] },
  ];
  it('is true for the very same series, whatever their values', () => {
    expect(
      sameSeries(
        [
          { name: 'a', samples: [{ labels: gpu0 }, { labels: gpu1 }] },
          { name: 'b', samples: [] },
        ],
        checked,
      ),
    ).toBe(true);
  });
  it.each([
    ['a family fewer', [{ name: 'a', samples: [{ labels: gpu0 }, { labels: gpu1 }] }]],
    [
      'another family name',
      [
        { name: 'a', samples: [{ labels: gpu0 }, { labels: gpu1 }] },
        { name: 'c', samples: [] },
      ],
    ],
    [
      'a series more',
      [
        { name: 'a', samples: [{ labels: gpu0 }, { labels: gpu1 }] },
        { name: 'b', samples: [{ labels: gpu0 }] },
      ],
    ],
    [
      'a series fewer',
      [
        { name: 'a', samples: [{ labels: gpu0 }] },
        { name: 'b', samples: [] },
      ],
    ],
    [
      'the same series twice',
      [
        { name: 'a', samples: [{ labels: gpu0 }, { labels: gpu0 }] },
        { name: 'b', samples: [] },
      ],
    ],
    // Equal but not the same array: not known to be checked.
    [
      'an equal array',
      [
        { name: 'a', samples: [{ labels: gpu0 }, { labels: [['gpu', '1']] }] },
        { name: 'b', samples: [] },
      ],
    ],
  ] as [string, { name: string; samples: { labels: [string, string][] }[] }[]][])('is false for %s', (_, families) => {
    expect(sameSeries(families, checked)).toBe(false);
  });
});

describe('expositionProblems', () => {
  // Each capture's file as collect renders it (not e2e.prom: node_exporter's scrape of one).
  const golden = readdirSync(GOLDEN)
    .filter((name) => name.endsWith('.prom') && name !== 'e2e.prom')
    .map((name) => [name, readFileSync(join(GOLDEN, name), 'utf8')] as const);

  it.each([...exact.map(([title, text]) => [title, text] as const), ...broken.map(([title, text]) => [title, text] as const)])(
    'says what checkExposition says: %s',
    (_, text) => expect(expositionProblems(text)).toEqual(checkExposition(text).problems),
  );

  it.each(golden)('reads %s, as render() wrote it, the quick way', (_, text) => {
    expect(readsAsRendered(text)).toBe(true);
    expect(checkExposition(text).problems).toEqual([]);
  });

  it('leaves labels in another order to checkExposition, also across families', () => {
    // The same sample name in two families (before and after its histogram's TYPE), its labels reordered:
    // a duplicate series that only reading the labels apart finds.
    const text = 'h_sum{a="1",b="2"} 1\n# TYPE h histogram\nh_sum{b="2",a="1"} 2\n';
    expect(readsAsRendered(text)).toBe(false);
    expect(expositionProblems(text)).toEqual(['line 3: duplicate series h_sum{b="2",a="1"}']);
  });

  it('keeps series apart whatever characters their values hold', () => {
    // Values holding what a key could be joined with: two series, no duplicate.
    const text = '# TYPE m gauge\nm{a="p\u0000b\u0001q",b="r"} 1\nm{a="p",b="q\u0000b\u0001r"} 1\n';
    expect(checkExposition(text).problems).toEqual([]);
    expect(readsAsRendered(text)).toBe(true);
    expect(
      checkFamilies([
        {
          name: 'm',
          samples: [
            {
              labels: [
                ['a', 'p\u0000q'],
                ['b', 'r'],
              ],
            },
            {
              labels: [
                ['a', 'p'],
                ['b', 'q\u0000r'],
              ],
            },
          ],
        },
      ]),
    ).toEqual([]);
  });

  it('reads a line over 64 KiB the long way (millions of labels would run the quick way out of stack)', () => {
    const line = (count: number) => `m{${Array.from({ length: count }, (_, i) => `l${i}="x"`).join(',')}} 1`;
    expect(line(6000).length).toBeLessThan(64 * 1024);
    expect(readsAsRendered(`# TYPE m gauge\n${line(6000)}\n`)).toBe(true);
    expect(line(8000).length).toBeGreaterThan(64 * 1024);
    expect(readsAsRendered(`# TYPE m gauge\n${line(8000)}\n`)).toBe(false);
    expect(expositionProblems(`# TYPE m gauge\n${line(8000)}\n`)).toEqual([]);
  });

  it('takes constructor and __proto__ for label names like any other', () => {
    expect(expositionProblems('# TYPE c gauge\nc{constructor="1"} 1\n')).toEqual([]);
    expect(checkExposition('# TYPE c gauge\nc{constructor="1"} 1\n').samples[0]?.labels).toEqual({ constructor: '1' });
    expect(expositionProblems('# TYPE c gauge\nc{__proto__="1"} 1\n')).toEqual(['line 2: invalid label name __proto__']);
  });

  // Whatever is done to a text render() wrote, the quick reading says it is clean only where
  // checkExposition finds nothing, and the problems given are checkExposition's.
  const edit = fc.oneof(
    fc.record({ kind: fc.constant('copy' as const), from: fc.nat(), to: fc.nat() }),
    fc.record({ kind: fc.constant('swap' as const), from: fc.nat(), to: fc.nat() }),
    fc.record({ kind: fc.constant('drop' as const), from: fc.nat() }),
    fc.record({ kind: fc.constant('reorder labels' as const), from: fc.nat() }),
    fc.record({ kind: fc.constant('trailing comma' as const), from: fc.nat() }),
    fc.record({ kind: fc.constant('timestamp' as const), from: fc.nat() }),
    fc.record({ kind: fc.constant('label twice' as const), from: fc.nat() }),
    fc.record({
      kind: fc.constant('character' as const),
      from: fc.nat(),
      at: fc.nat(),
      put: fc.constantFrom('"', '\\', '{', '}', ',', '=', ' ', '_', '\n', '#', 'a', '1', '.', '\t', ''),
    }),
    fc.record({ kind: fc.constant('final newline' as const) }),
  );
  type Edit = typeof edit extends fc.Arbitrary<infer E> ? E : never;
  const apply = (text: string, edits: Edit[]): string => {
    let lines = text.split('\n');
    for (const e of edits) {
      if (e.kind === 'final newline') {
        lines = lines.at(-1) === '' ? lines.slice(0, -1) : [...lines, ''];
        continue;
      }
      const i = e.from % lines.length;
      const line = lines[i]!;
      if (e.kind === 'copy') lines.splice(e.to % (lines.length + 1), 0, line);
      else if (e.kind === 'swap') [lines[i], lines[e.to % lines.length]] = [lines[e.to % lines.length]!, line];
      else if (e.kind === 'drop') lines.splice(i, 1);
      else if (e.kind === 'reorder labels')
        lines[i] = line.replace(
          /\{(.*)\}/,
          (_, set: string) =>
            `{${set
              .split(/,(?=[a-zA-Z_]+=")/)
              .reverse()
              .join(',')}}`,
        );
      else if (e.kind === 'trailing comma') lines[i] = line.replace(/"\}/, '",}');
      else if (e.kind === 'timestamp') lines[i] = `${line} 1700000000000`;
      else if (e.kind === 'label twice') lines[i] = line.replace(/\{([a-zA-Z_]+="[^"]*")/, '{$1,$1');
      else lines[i] = line.slice(0, e.at % (line.length + 1)) + e.put + line.slice((e.at % (line.length + 1)) + 1);
      if (lines.length === 0) lines = [''];
    }
    return lines.join('\n');
  };

  it('is never clean where checkExposition finds a problem, whatever is done to a rendered text', () => {
    const texts = golden.map(([, text]) => text).filter((text) => text.length < 20_000);
    let caught = 0;
    fc.assert(
      fc.property(fc.nat(texts.length - 1), fc.array(edit, { minLength: 1, maxLength: 4 }), (which, edits) => {
        const text = apply(texts[which]!, edits);
        const problems = checkExposition(text).problems;
        if (readsAsRendered(text)) expect(problems).toEqual([]);
        else caught++;
        expect(expositionProblems(text)).toEqual(problems);
      }),
      { numRuns: 1500 },
    );
    // The edits do reach the long way: most of them break a rule or are written unlike render().
    expect(caught).toBeGreaterThan(750);
  });
});
