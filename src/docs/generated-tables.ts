import { CSV_HEADER } from '../csvlog/columns.js';
import { FAILURE_REASONS } from '../collection.js';
import { metricCatalog } from '../metrics/metrics-catalog.js';
import { HARDWARE_XIDS, XID_MEANINGS } from '../xid/codes.js';

const cell = (text: string) => text.replace(/\|/g, '\\|');

/** docs/metrics.md's metric table, derived from the field table so it cannot drift. */
export function metricTable(): string {
  const rows = metricCatalog().map(
    (m) =>
      `| \`${m.name}\` | ${m.type} | ${m.unit ? cell(m.unit) : ''} | ${m.labels.map((l) => `\`${l}\``).join(', ')} | ${cell(m.source)} | ${cell(m.help)} |`,
  );
  return ['| metric | type | nvidia-smi unit | labels | source | meaning |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

/** docs/metrics.md's failure reasons, from the same list the collector uses. */
export function reasonTable(): string {
  return [
    '| reason | meaning |',
    '|---|---|',
    ...Object.entries(FAILURE_REASONS).map(([reason, text]) => `| \`${reason}\` | ${cell(text)} |`),
  ].join('\n');
}

/** docs/metrics.md's Xid codes, from the table doctor explains them with. */
export function xidTable(): string {
  return [
    '| Xid | meaning | `GpuXidHardwareError` alert |',
    '|---|---|---|',
    ...Object.entries(XID_MEANINGS).map(
      ([xid, text]) => `| ${xid} | ${cell(text)} | ${HARDWARE_XIDS.includes(Number(xid)) ? 'yes' : ''} |`,
    ),
  ].join('\n');
}

/** The CSV's header line. */
export const csvHeaderLine = (): string => CSV_HEADER.join(',');

/** Generated sections of the docs, per file: each between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->`. */
export const GENERATED_SECTIONS: Record<string, Record<string, () => string>> = {
  'docs/metrics.md': { metrics: metricTable, reasons: reasonTable, 'xid-codes': xidTable },
  'docs/csv.md': { 'csv-header': () => ['```', csvHeaderLine(), '```'].join('\n') },
};

/** A doc's text with each of `sections` rewritten from the code. */
export function regenerate(text: string, sections: Record<string, () => string>): string {
  let fresh = text;
  for (const [name, make] of Object.entries(sections)) {
    const pattern = new RegExp(`(<!-- generated:${name} -->\\n)[\\s\\S]*?(\\n?<!-- /generated:${name} -->)`);
    if (!pattern.test(fresh)) throw new Error(`no generated:${name} section`);
    fresh = fresh.replace(pattern, (_, start: string) => `${start}${make()}\n<!-- /generated:${name} -->`);
  }
  return fresh;
}
