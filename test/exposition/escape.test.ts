import { describe, expect, it } from 'vitest';
import { escapeHelp, escapeLabelValue, formatValue } from '../../src/exposition/escape.js';

// Written from the text format's rules, not from our own output:
// label values escape \ " and line feed; HELP escapes \ and line feed only; floats in Go syntax.
const labelValueCases: [title: string, input: string, expected: string][] = [
  ['0: plain', 'NVIDIA H200', 'NVIDIA H200'],
  ['1: quote, backslash, newline', 'a"b\\c\nd', 'a\\"b\\\\c\\nd'],
  ['2: comma and braces stay', 'x,y}{=', 'x,y}{='],
  ['3: non-ASCII stays', 'Grafikkarte über 日本', 'Grafikkarte über 日本'],
  ['4: backslash before n is not a newline', '\\n', '\\\\n'],
  ['5: empty', '', ''],
];

const helpCases: [title: string, input: string, expected: string][] = [
  ['0: plain', 'Power drawn, in watts.', 'Power drawn, in watts.'],
  ['1: quotes are not escaped in HELP', 'say "hi"', 'say "hi"'],
  ['2: backslash and newline', 'a\\b\nc', 'a\\\\b\\nc'],
];

const valueCases: [title: string, input: number, expected: string][] = [
  ['0: integer', 150754820096, '150754820096'],
  ['1: fraction', 76.68, '76.68'],
  ['2: NaN', Number.NaN, 'NaN'],
  ['3: +Inf', Infinity, '+Inf'],
  ['4: -Inf', -Infinity, '-Inf'],
  ['5: tiny', 1e-6, '0.000001'],
];

describe('escapeLabelValue', () => {
  it.each(labelValueCases)('%s', (_, input, expected) => expect(escapeLabelValue(input)).toBe(expected));
});
describe('escapeHelp', () => {
  it.each(helpCases)('%s', (_, input, expected) => expect(escapeHelp(input)).toBe(expected));
});
describe('formatValue', () => {
  it.each(valueCases)('%s', (_, input, expected) => expect(formatValue(input)).toBe(expected));
});
