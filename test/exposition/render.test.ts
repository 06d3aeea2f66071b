import { describe, expect, it } from 'vitest';
import { newRenderCache, render, type RenderCache } from '../../src/exposition/render.js';

// Written from the text format's spec (HELP and TYPE once, before the samples; labels in braces only
// when there are any; HELP escapes backslash and newline), not copied from our output.
describe('render', () => {
  it('a sample without labels has no braces', () => {
    expect(render([{ name: 'up', help: 'Whether it ran.', type: 'gauge', samples: [{ labels: [], value: 1 }] }])).toBe(
      '# HELP up Whether it ran.\n# TYPE up gauge\nup 1\n',
    );
  });
  it('a family without samples is left out, HELP and TYPE too', () => {
    const families = [
      { name: 'a', help: 'A.', type: 'gauge' as const, samples: [] },
      {
        name: 'b_total',
        help: 'B, with a \\ and a\nnewline.',
        type: 'counter' as const,
        samples: [{ labels: [['gpu', '0']] as [string, string][], value: 2 }],
      },
    ];
    expect(render(families)).toBe('# HELP b_total B, with a \\\\ and a\\nnewline.\n# TYPE b_total counter\nb_total{gpu="0"} 2\n');
  });
});

// The daemon mode keeps a RenderCache from one sample to the next: whatever changed, the text is
// exactly what a fresh render of the same families gives, and a block never stands for other values.
describe('render with a kept cache', () => {
  type Sample = { labels: readonly (readonly [string, string])[]; value: number };
  const gpu0 = [['gpu', '0']] as const satisfies readonly (readonly [string, string])[];
  const gpu1 = [['gpu', '1']] as const satisfies readonly (readonly [string, string])[];
  const fam = (name: string, samples: Sample[], help = `${name} help.`) => ({ name, help, type: 'gauge' as 'gauge' | 'counter', samples });
  const same = (families: ReturnType<typeof fam>[], cache: RenderCache) => expect(render(families, cache)).toBe(render(families));

  it('a changed value is rendered again, under the same labels array', () => {
    const cache = newRenderCache();
    same([fam('power_watts', [{ labels: gpu0, value: 100 }])], cache);
    const text = render([fam('power_watts', [{ labels: gpu0, value: 101.5 }])], cache);
    expect(text).toBe('# HELP power_watts power_watts help.\n# TYPE power_watts gauge\npower_watts{gpu="0"} 101.5\n');
  });

  it('an unchanged family is written from its block; NaN and -0 are told apart from other values', () => {
    const cache = newRenderCache();
    const first = [{ labels: gpu0, value: Number.NaN }];
    same([fam('a', first)], cache);
    same([fam('a', [{ labels: gpu0, value: Number.NaN }])], cache);
    expect(cache.blocks.get('a')?.samples).toBe(first);
    same([fam('a', [{ labels: gpu0, value: 0 }])], cache);
    same([fam('a', [{ labels: gpu0, value: -0 }])], cache);
    expect(render([fam('a', [{ labels: gpu0, value: -0 }])], cache)).toContain('a{gpu="0"} 0\n');
    same([fam('a', [{ labels: gpu0, value: 1 }])], cache);
  });

  it('a series that comes or goes, or changes its labels, is rendered again', () => {
    const cache = newRenderCache();
    same([fam('a', [{ labels: gpu0, value: 1 }])], cache);
    same(
      [
        fam('a', [
          { labels: gpu0, value: 1 },
          { labels: gpu1, value: 1 },
        ]),
      ],
      cache,
    );
    same([fam('a', [{ labels: gpu1, value: 1 }])], cache);
    // Equal contents in another array: its own text, never the other array's.
    same([fam('a', [{ labels: [['gpu', '2']], value: 1 }])], cache);
    same([fam('a', [{ labels: [['gpu', '3']], value: 1 }])], cache);
  });

  it('a family that appears, disappears or comes back with other values, or other HELP, is rendered as it is now', () => {
    const cache = newRenderCache();
    same([fam('a', [{ labels: gpu0, value: 1 }]), fam('b', [{ labels: gpu0, value: 2 }])], cache);
    same([fam('a', [{ labels: gpu0, value: 1 }])], cache);
    same([fam('a', [{ labels: gpu0, value: 1 }]), fam('b', [])], cache);
    same([fam('b', [{ labels: gpu0, value: 3 }]), fam('a', [{ labels: gpu0, value: 1 }])], cache);
    same([fam('b', [{ labels: gpu0, value: 3 }], 'Other help.')], cache);
    same([{ ...fam('b', [{ labels: gpu0, value: 3 }], 'Other help.'), type: 'counter' as const }], cache);
  });
});
