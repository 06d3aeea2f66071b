import { fieldNames, type FieldSpec } from '../../fields/field-spec.js';

/**
 * `nvidia-smi --help-query-gpu` -> every field name it accepts. Entries are lines that start with
 * a quoted name, optionally followed by `or "alias"`; compute-mode lines like `"0: Default"` are not names.
 */
export function parseHelpQueryGpu(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    if (!/^"[A-Za-z_][\w.]*"/.test(line)) continue;
    for (const match of line.matchAll(/"([A-Za-z_][\w.]*)"/g)) names.add(match[1]!);
  }
  return names;
}

/** For each field, the first of its names this driver accepts; fields it accepts under no name are left out. */
export function resolveQueryNames(fields: readonly FieldSpec[], accepted: ReadonlySet<string>): Record<string, string> {
  const chosen: Record<string, string> = {};
  for (const field of fields) {
    const name = fieldNames(field).find((candidate) => accepted.has(candidate));
    if (name) chosen[field.query] = name;
  }
  return chosen;
}
