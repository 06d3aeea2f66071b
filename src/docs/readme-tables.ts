import { CSV_HEADER } from '../csvlog/columns.js';
import { FAILURE_REASONS } from '../nvidia-smi/failure.js';
import { metricCatalog } from '../metrics.js';

const cell = (text: string) => text.replace(/\|/g, '\\|');

/** The README's metric table, derived from the field table so it cannot drift. */
export function metricTable(): string {
  const rows = metricCatalog().map((m) =>
    `| \`${m.name}\` | ${m.type} | ${m.unit ? cell(m.unit) : ''} | ${m.labels.map((l) => `\`${l}\``).join(', ')} | ${cell(m.source)} | ${cell(m.help)} |`,
  );
  return ['| metric | type | nvidia-smi unit | labels | source | meaning |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

/** The README's failure reasons, from the same list the collector uses. */
export function reasonTable(): string {
  return ['| reason | meaning |', '|---|---|', ...Object.entries(FAILURE_REASONS).map(([reason, text]) => `| \`${reason}\` | ${cell(text)} |`)].join('\n');
}

/** The CSV's header line. */
export const csvHeaderLine = (): string => CSV_HEADER.join(',');

/** Generated README sections, each between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`. */
export const GENERATED_SECTIONS: Record<string, () => string> = {
  metrics: metricTable,
  reasons: reasonTable,
  'csv-header': () => ['```', csvHeaderLine(), '```'].join('\n'),
};

/** The README with every generated section rewritten from the code. */
export function regenerate(readme: string): string {
  let text = readme;
  for (const [name, make] of Object.entries(GENERATED_SECTIONS)) {
    const pattern = new RegExp(`(<!-- generated:${name} -->\\n)[\\s\\S]*?(\\n?<!-- /generated:${name} -->)`);
    if (!pattern.test(text)) throw new Error(`README has no generated:${name} section`);
    text = text.replace(pattern, (_, start: string) => `${start}${make()}\n<!-- /generated:${name} -->`);
  }
  return text;
}
