import { expect, it } from 'vitest';
import { randomHex } from '../../src/files/random-hex.js';

it('randomHex gives 16 hex digits, different each time', () => {
  const names = Array.from({ length: 200 }, randomHex);
  for (const name of names) expect(name).toMatch(/^[0-9a-f]{16}$/);
  expect(new Set(names).size).toBe(names.length);
});
