import { escapeHelp, escapeLabelValue, formatValue } from './escape.js';
import type { MetricFamily, MetricSample } from './families.js';

type Labels = MetricSample['labels'];

const renderLabels = (labels: Labels): string =>
  labels.length === 0 ? '' : `{${labels.map(([label, value]) => `${label}="${escapeLabelValue(value)}"`).join(',')}}`;

/** Families -> exposition text. Families without samples are left out. */
export function render(families: readonly MetricFamily[]): string {
  // Most series share their labels array with the other series of their GPU (in every family):
  // each array is escaped and joined once per text, not once per series.
  const rendered = new Map<Labels, string>();
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
