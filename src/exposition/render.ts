import { escapeHelp, escapeLabelValue, formatValue } from './escape.js';
import type { MetricFamily, MetricSample } from './families.js';

const renderSample = (name: string, sample: MetricSample): string => {
  const labels = sample.labels.map(([label, value]) => `${label}="${escapeLabelValue(value)}"`).join(',');
  return `${name}${labels ? `{${labels}}` : ''} ${formatValue(sample.value)}\n`;
};

/** Families -> exposition text. Families without samples are left out. */
export function render(families: readonly MetricFamily[]): string {
  return families
    .filter((family) => family.samples.length > 0)
    .map(
      (family) =>
        `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n` +
        family.samples.map((sample) => renderSample(family.name, sample)).join(''),
    )
    .join('');
}
