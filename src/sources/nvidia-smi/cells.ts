/**
 * nvidia-smi's --format=csv output: the only code that knows how it separates cells and how it
 * spells "no value" and "error" inside a cell.
 */
import type { FieldError } from '../../collection.js';

/** A cell as nvidia-smi meant it. */
export type Cell = { kind: 'value'; text: string } | { kind: 'absent' } | { kind: 'error'; error: FieldError };

const ABSENT = new Set(['', 'N/A', '[N/A]', '[Not Supported]', 'Not Supported', '[Requested functionality has been deprecated]']);

const ERRORS: Record<string, FieldError> = {
  '[Unknown Error]': 'unknown_error',
  '[GPU requires reset]': 'gpu_requires_reset',
  '[GPU Requires Reset]': 'gpu_requires_reset',
  '[Insufficient Permissions]': 'insufficient_permissions',
  '[GPU is lost]': 'gpu_lost',
  'ERR!': 'err',
};

/** "[N/A]" -> absent, "[Unknown Error]" -> error, "76.68" -> value. */
export function classifyCell(raw: string): Cell {
  const text = raw.trim();
  if (ABSENT.has(text)) return { kind: 'absent' };
  const error = ERRORS[text];
  if (error) return { kind: 'error', error };
  if (/^\[.*\]$/.test(text)) return { kind: 'error', error: 'unrecognized' };
  return { kind: 'value', text };
}

// --format=csv has no quoting: values are joined with ", " and a comma inside a value looks like a
// new column. Callers check the cell count; nothing here guesses.
/** One output line -> its cells. */
export const splitCells = (line: string): string[] => line.split(', ');

/** Output text -> non-empty lines, CR stripped. */
export const outputLines = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line.trim() !== '');
