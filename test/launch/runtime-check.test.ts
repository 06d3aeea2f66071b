import { describe, expect, it } from 'vitest';
import { runtimeProblem, satisfies } from '../../src/launch/runtime-check.js';

describe('the runtime check', () => {
  it('compares major, minor and patch as numbers', () => {
    const cases = ['v20.18.9', 'v20.19.0', 'v20.20.2', 'v21.0.0', 'v18.20.8', 'v12.22.12', 'v100.0.0', 'v3.99.0'];
    expect(cases.map((found) => [found, satisfies(found, '>=20.19')])).toEqual([
      ['v20.18.9', false],
      ['v20.19.0', true],
      ['v20.20.2', true],
      ['v21.0.0', true],
      ['v18.20.8', false],
      ['v12.22.12', false],
      ['v100.0.0', true],
      ['v3.99.0', false],
    ]);
    expect(satisfies('v22.12.0', '>=22.12.1')).toBe(false);
  });

  it('says what it needs and what it found, in one line', () => {
    expect(runtimeProblem('v18.20.8', '>=20.19', '/usr/bin/node')).toBe(
      'gpu-textfile: needs Node.js >=20.19, found v18.20.8 (/usr/bin/node)',
    );
    expect(runtimeProblem('v22.0.0', '>=20.19', '/usr/bin/node')).toBeUndefined();
  });
});
