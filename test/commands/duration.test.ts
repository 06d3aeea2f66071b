import { describe, expect, it } from 'vitest';
import { parseDays, parseDuration } from '../../src/commands/duration.js';

describe('parseDuration', () => {
  it.each([
    ['3', 3000],
    ['0.5', 500],
    ['10s', 10_000],
    ['500ms', 500],
    ['2m', 120_000],
    ['1h', 3_600_000],
  ])('%s -> %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));
  it.each(['', 'ten', '5 parsecs', '-1', '1s2'])('rejects %j', (text) => expect(parseDuration(text)).toBeUndefined());
});

describe('parseDays', () => {
  it.each([
    ['7', 7],
    ['0.5', 0.5],
    ['7d', 7],
    ['36h', 1.5],
    ['1440m', 1],
  ])('%s -> %d days', (text, days) => expect(parseDays(text)).toBe(days));
  it.each(['', '7x', 'week', '-1'])('rejects %j', (text) => expect(parseDays(text)).toBeUndefined());
});
