import { describe, expect, it } from 'vitest';
import { render } from '../../src/exposition/render.js';

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
