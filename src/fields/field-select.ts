// Which fields of the table a run asks for: --exclude-fields globs and --slow-fields.
import { fieldNames, type FieldSpec } from './field-spec.js';

// The glob's own characters taken literally first, then `*` and `?` given their meaning.
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Glob match for --exclude-fields: `*` matches any run of characters, `?` one character. */
export function globMatches(glob: string, name: string): boolean {
  const pattern = escapeRegExp(glob).replace(/\\\*/g, '.*').replace(/\\\?/g, '.');
  return new RegExp(`^${pattern}$`).test(name);
}

/**
 * Fields left after --exclude-fields, and without the slow ones unless asked for. A glob matches a
 * field by any of its names or its metric. index and uuid cannot be excluded: every series is named by them.
 */
export function selectFields(fields: readonly FieldSpec[], excludeGlobs: readonly string[], includeSlow = false): FieldSpec[] {
  return fields.filter(
    (field) =>
      field.query === 'index' ||
      field.query === 'uuid' ||
      ((includeSlow || !field.slow) &&
        !excludeGlobs.some((glob) =>
          [...fieldNames(field), ...(field.metric ? [field.metric] : [])].some((name) => globMatches(glob, name)),
        )),
  );
}
