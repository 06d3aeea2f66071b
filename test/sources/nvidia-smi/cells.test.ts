import { describe, expect, it } from 'vitest';
import { classifyCell, outputLines, splitCells } from '../../../src/sources/nvidia-smi/cells.js';

const cell = (raw: string, expected: ReturnType<typeof classifyCell>) => () => expect(classifyCell(raw)).toEqual(expected);
const absent = { kind: 'absent' } as const;

describe('classifyCell', () => {
  it('[N/A] is absent', cell('[N/A]', absent));
  it('N/A is absent', cell('N/A', absent));
  it('empty is absent', cell('', absent));
  it('[Not Supported] is absent', cell('[Not Supported]', absent));
  it('deprecated is absent', cell('[Requested functionality has been deprecated]', absent));
  it('[Unknown Error] is an error', cell('[Unknown Error]', { kind: 'error', error: 'unknown_error' }));
  it('[GPU requires reset] is an error', cell('[GPU requires reset]', { kind: 'error', error: 'gpu_requires_reset' }));
  it('[Insufficient Permissions] is an error', cell('[Insufficient Permissions]', { kind: 'error', error: 'insufficient_permissions' }));
  it('ERR! is an error', cell('ERR!', { kind: 'error', error: 'err' }));
  it('any other [..] is an unrecognized error', cell('[Something New]', { kind: 'error', error: 'unrecognized' }));
  it('a number is a value', cell(' 76.68 ', { kind: 'value', text: '76.68' }));
  it('a value that only contains brackets is a value', cell('NVIDIA [x] H200', { kind: 'value', text: 'NVIDIA [x] H200' }));
  it('a value that starts with brackets is a value', cell('[x] H200', { kind: 'value', text: '[x] H200' }));
  it('a value that ends with brackets is a value', cell('H200 [x]', { kind: 'value', text: 'H200 [x]' }));
});

describe('splitCells and outputLines', () => {
  it('keeps an empty last cell', () => expect(splitCells('a, b, ')).toEqual(['a', 'b', '']));
  it('drops blank lines and CR', () => expect(outputLines('a\r\n\nb\n')).toEqual(['a', 'b']));
  it('drops lines of spaces', () => expect(outputLines('a\n  \nb\n')).toEqual(['a', 'b']));
  it('a CR inside a line stays: only the one before the newline goes', () => expect(outputLines('a\rb\r\n')).toEqual(['a\rb']));
});
