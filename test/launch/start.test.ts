import { describe, expect, it } from 'vitest';
import { whenMade } from '../../src/launch/start.js';

/** An object whose `stream` is made on first use, as Node.js makes process.stdout; counts the makings. */
function lazyOwner() {
  const owner = { makings: 0 };
  let stream: { id: number } | undefined;
  Object.defineProperty(owner, 'stream', {
    configurable: true,
    enumerable: true,
    get: () => {
      owner.makings++;
      stream ??= { id: 7 };
      return stream;
    },
  });
  return owner as { makings: number; stream: { id: number } };
}

describe('whenMade (the launcher attaches to stdout and stderr only once they are made)', () => {
  it('makes nothing until the property is read, then attaches once to what was made', () => {
    const owner = lazyOwner();
    const attached: unknown[] = [];
    whenMade(owner, 'stream', (made) => attached.push(made));
    expect([owner.makings, attached]).toEqual([0, []]);
    const first = owner.stream;
    const again = owner.stream;
    expect(first).toBe(again);
    expect(attached).toEqual([{ id: 7 }]);
    expect(attached[0]).toBe(first);
    expect(owner.makings).toBe(1);
  });

  it('keeps the property enumerable as it was', () => {
    const owner = lazyOwner();
    whenMade(owner, 'stream', () => {});
    expect(Object.keys(owner)).toContain('stream');
  });

  it('attaches at once where the property is a plain value (made already)', () => {
    const owner = { stream: { id: 1 } };
    const attached: unknown[] = [];
    whenMade(owner, 'stream', (made) => attached.push(made));
    expect(attached).toEqual([{ id: 1 }]);
  });

  it("process.stdout is still made by Node.js's own getter, the same stream on every read", () => {
    const attached: unknown[] = [];
    const before = Object.getOwnPropertyDescriptor(process, 'stdout');
    try {
      whenMade(process, 'stdout', (made) => attached.push(made));
      expect(process.stdout).toBe(process.stdout);
      expect(attached).toHaveLength(1);
      expect(attached[0]).toBe(process.stdout);
      expect(typeof process.stdout.write).toBe('function');
    } finally {
      if (before) Object.defineProperty(process, 'stdout', before);
    }
  });
});
