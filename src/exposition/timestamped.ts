import { escapeHelp, escapeLabelValue, formatValue } from './escape.js';
import type { MetricFamily, MetricSample } from './families.js';

// Samples with their own timestamps, as a store's import takes them (gpu-textfile export): the
// OpenMetrics text format (promtool tsdb create-blocks-from openmetrics) and the Prometheus text
// format (VictoriaMetrics' /api/v1/import/prometheus). They differ in three places only: the
// timestamp's unit, a counter family's name, and the closing `# EOF`.
// https://prometheus.io/docs/specs/om/open_metrics_spec/  https://prometheus.io/docs/instrumenting/exposition_formats/

/** Which text format: OpenMetrics 1.0 (timestamps in seconds) or Prometheus 0.0.4 (milliseconds). */
export type TimestampedFormat = 'openmetrics' | 'prometheus';

export const TIMESTAMPED_FORMATS: readonly TimestampedFormat[] = ['openmetrics', 'prometheus'];

/**
 * A family's HELP and TYPE lines. OpenMetrics names a counter's family without its `_total`, which
 * only its samples carry (the spec's rule; promtool 2.42 happens to take either), and escapes a
 * double quote in HELP too; the Prometheus format names the family as its samples.
 */
export function familyHeader(format: TimestampedFormat, family: Pick<MetricFamily, 'name' | 'type' | 'help'>): string {
  if (format === 'prometheus') return `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n`;
  const name = family.type === 'counter' ? family.name.replace(/_total$/, '') : family.name;
  return `# HELP ${name} ${escapeLabelValue(family.help)}\n# TYPE ${name} ${family.type}\n`;
}

/** `name{labels} `: what every sample of one series starts with (made once per series by the caller). */
export const seriesPrefix = (name: string, labels: MetricSample['labels']): string =>
  labels.length === 0 ? `${name} ` : `${name}{${labels.map(([label, value]) => `${label}="${escapeLabelValue(value)}"`).join(',')}} `;

/** A time (epoch milliseconds) as the format writes it: seconds with a fraction (OpenMetrics), or whole milliseconds. */
export const timestampText = (format: TimestampedFormat, timeMs: number): string =>
  format === 'openmetrics' ? formatValue(timeMs / 1000) : String(Math.round(timeMs));

/** The rest of a sample's line after its series prefix: the value and the time as timestampText wrote it (once per collection). */
export const valueAt = (value: number, timestamp: string): string => `${formatValue(value)} ${timestamp}\n`;

/** What ends the text: OpenMetrics requires `# EOF` (promtool refuses a text without it); the Prometheus format has no end mark. */
export const formatEnd = (format: TimestampedFormat): string => (format === 'openmetrics' ? '# EOF\n' : '');
