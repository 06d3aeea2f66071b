import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { render } from '../../src/exposition/render.js';
import type { Collection, GpuSample } from '../../src/collection.js';
import { buildFamilies } from '../../src/metrics/metrics.js';
import { parseComputeApps } from '../../src/sources/nvidia-smi/compute-apps.js';

const UUID = 'GPU-d9041e44-56fa-e7d7-44d1-12664904be3d';
const gpu: GpuSample = { gpu: '0', uuid: UUID, readings: new Map() };

// Any text a process name can hold: quotes, backslashes, commas, newlines, braces, non-ASCII.
const hostileText = fc.string({
  unit: fc.oneof(
    fc.constantFrom('"', '\\', ',', ', ', '\n', '{', '}', '=', '#', ' ', 'é', '日', '\u2028'),
    fc.string({ minLength: 1, maxLength: 1, unit: 'grapheme' }),
  ),
  maxLength: 40,
});
// A line inside a name that starts like a new record would make the output ambiguous for any reader.
const processName = hostileText.filter(
  (name) => name.trim() !== '' && !/(^|\n)\s*(GPU|MIG)-/.test(name) && !/^\s|\s$/.test(name) && !name.includes('\r'),
);

const collectionWith = (apps: Collection['processes']): Collection => ({
  fields: [],
  samples: [gpu],
  down: [],
  processes: apps,
  health: { durationSeconds: 0.1, lastSuccessSeconds: 1 },
});

describe('hostile process names and label values', () => {
  it('output always parses, never gains a series, and round-trips the names', () => {
    fc.assert(
      fc.property(fc.array(processName, { minLength: 1, maxLength: 5 }), (names) => {
        const stdout = names.map((name, i) => `${UUID}, ${100 + i}, ${name}, ${i + 1}\n`).join('');
        const { apps, skipped } = parseComputeApps(stdout);
        expect(skipped).toBe(0);
        const text = render(buildFamilies(collectionWith({ apps: apps.map((a) => ({ ...a, user: 'u' })), dropped: 0, skipped })));
        const parsed = checkExposition(text);
        expect(parsed.problems).toEqual([]);
        const series = parsed.samples.filter((s) => s.name === 'nvidia_gpu_process_memory_used_bytes');
        expect(series.map((s) => s.labels.process_name)).toEqual(names);
        const jobs = parsed.samples.filter((s) => s.name === 'nvidia_gpu_holder_info');
        // A job per distinct command (one user; at most 5 here, under the 8 per GPU): the names survive there too.
        expect(jobs.map((s) => s.labels.job_id).sort()).toEqual([...new Set(names.map((n) => n.split('/').pop() || n))].sort());
        expect(parsed.samples.filter((s) => !s.name.startsWith('nvidia_gpu_collector_')).length).toBe(names.length + 4 + jobs.length);
      }),
      { numRuns: 300 },
    );
  });

  it('any constant label value survives rendering and parsing', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 30 }), (value) => {
        const text = render(buildFamilies(collectionWith(undefined), [['site', value]]));
        const parsed = checkExposition(text);
        expect(parsed.problems).toEqual([]);
        expect(parsed.samples.every((s) => s.labels.site === value)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
