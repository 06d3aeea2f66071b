import type { GpuSample, Reading, RowProblem } from '../../collection.js';
import type { FieldSpec } from '../../fields/field-spec.js';
import { classifyCell } from './cells.js';

// --query-gpu rows -> typed samples: nvidia-smi's units and words become base units and numbers.

const BOOLEAN_WORDS: Record<'enabled' | 'active' | 'yes-no', Record<string, number>> = {
  enabled: { Enabled: 1, Disabled: 0 },
  active: { Active: 1, 'Not Active': 0 },
  'yes-no': { Yes: 1, No: 0 },
};

const NUMBER = /^-?\d+(?:\.\d+)?$/;

/**
 * A decimal text times a unit factor, as the nearest double to the exact product: a power-of-ten
 * factor moves the decimal point in the text ("204642816" us -> 204.642816 s) instead of multiplying
 * in binary (204.64281599999998), which Prometheus clients would print as noise.
 */
export function scaleDecimal(text: string, factor: number): number {
  const exponent = Math.round(Math.log10(factor));
  return factor !== 1 && 10 ** exponent === factor && NUMBER.test(text) ? Number(`${text}e${exponent}`) : Number(text) * factor;
}

/** One cell of one field -> a reading. Strings never become numbers. */
export function readCell(field: FieldSpec, raw: string): Reading {
  const cell = classifyCell(raw);
  if (cell.kind !== 'value') return cell;
  const text = cell.text;
  switch (field.kind) {
    case 'label':
    case 'state':
      return { kind: 'text', text };
    case 'number':
      return NUMBER.test(text)
        ? { kind: 'number', value: scaleDecimal(text, field.factor ?? 1), shown: text }
        : { kind: 'error', error: 'unparsable' };
    case 'pstate': {
      const match = /^P(\d{1,2})$/.exec(text);
      return match ? { kind: 'number', value: Number(match[1]), shown: text } : { kind: 'error', error: 'unparsable' };
    }
    default: {
      const value = BOOLEAN_WORDS[field.kind][text];
      return value === undefined ? { kind: 'error', error: 'unparsable' } : { kind: 'number', value, shown: text };
    }
  }
}

/** One --query-gpu row (cells in the order of `fields`) -> a sample, or why not. */
export function sampleFromCells(fields: readonly FieldSpec[], cells: readonly string[], line: string): GpuSample | RowProblem {
  const gpu = /^\d+$/.test(cells[0]?.trim() ?? '') ? cells[0]!.trim() : undefined;
  const uuid = /^(GPU|MIG)-[\w-]+$/.test(cells[1]?.trim() ?? '') ? cells[1]!.trim() : undefined;
  if (cells.length !== fields.length) {
    return { line, gpu, uuid, message: `row has ${cells.length} cells, the query asked for ${fields.length}` };
  }
  if (gpu === undefined || uuid === undefined) {
    return { line, gpu, uuid, message: 'row does not start with a GPU index and UUID' };
  }
  const readings = new Map<string, Reading>();
  for (const [i, field] of fields.entries()) readings.set(field.query, readCell(field, cells[i]!));
  return { gpu, uuid, readings };
}
