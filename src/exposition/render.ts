import { escapeHelp, escapeLabelValue, formatValue } from './escape.js';
import type { MetricFamily, MetricSample } from './families.js';

type Labels = MetricSample['labels'];

const renderLabels = (labels: Labels): string =>
  labels.length === 0 ? '' : `{${labels.map(([label, value]) => `${label}="${escapeLabelValue(value)}"`).join(',')}}`;

/**
 * Families -> exposition text. Families without samples are left out. `rendered` holds each labels
 * array's text: most series share their array with the other series of their GPU (in every family),
 * so each is escaped and joined once per text, not once per series; a long-running publisher that
 * keeps its arrays from one collection to the next (metrics.ts) keeps this too, and each is done once.
 */
export function render(families: readonly MetricFamily[], rendered: WeakMap<Labels, string> = new WeakMap()): string {
  const labelsText = (labels: Labels): string => {
    let text = rendered.get(labels);
    if (text === undefined) rendered.set(labels, (text = renderLabels(labels)));
    return text;
  };
  let text = '';
  for (const family of families) {
    if (family.samples.length === 0) continue;
    text += `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n`;
    for (const sample of family.samples) text += `${family.name}${labelsText(sample.labels)} ${formatValue(sample.value)}\n`;
  }
  return text;
}
