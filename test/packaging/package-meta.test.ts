import { describe, expect, it } from 'vitest';
import { COMPAT_FILE_SUFFIXES, debScripts } from '../../scripts/package-meta.mjs';
import { COMPAT_NAMES } from '../../src/compat/compat-file.js';

// The packages' remove scripts take away every file collect may have written, --compat's included:
// one left behind is served by node_exporter with its last values for ever.

describe('the remove scripts', () => {
  it('know every --compat file', () => {
    expect([...COMPAT_FILE_SUFFIXES]).toEqual([...COMPAT_NAMES]);
  });

  it("remove each --compat generation's file", () => {
    const postrm = Object.values(debScripts(['gpu-textfile.timer'], ['gpu-textfile.service'], '/var/lib/prometheus/node-exporter')).join(
      '\n',
    );
    for (const name of COMPAT_NAMES) expect(postrm).toContain(`"\${name%.prom}_${name}.prom"`);
  });
});
