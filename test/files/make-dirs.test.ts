import { describe, expect, it } from 'vitest';
import { makeDirs } from '../../src/files/make-dirs.js';

describe('makeDirs', () => {
  // Node's recursive mkdir loops for ever here; ours must give up with an error.
  it('fails on a path below /proc instead of looping', () => {
    expect(() => makeDirs('/proc/nope/textfile')).toThrow();
  });
});
