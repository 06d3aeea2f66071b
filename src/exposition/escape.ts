// The Prometheus text format's escaping rules, and nothing else.
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-format-details

const HELP_SPECIAL = /[\\\n]/;
const LABEL_SPECIAL = /[\\"\n]/;

/** HELP text: backslash and line feed are escaped. */
export const escapeHelp = (text: string): string => (HELP_SPECIAL.test(text) ? text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n') : text);

// Most values (indices, UUIDs, numbers) need no escaping: test once before three replaces.
/** Label values: backslash, double quote and line feed are escaped. */
export const escapeLabelValue = (text: string): string =>
  LABEL_SPECIAL.test(text) ? text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : text;

/** Sample values: Go float syntax, with NaN, +Inf and -Inf spelled as the format wants. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return String(value);
}

export const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
