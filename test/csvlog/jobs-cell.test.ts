import { describe, expect, it } from 'vitest';
import { csvCells } from '../../src/csvlog/read.js';
import { csvCell } from '../../src/csvlog/columns.js';
import { jobsCell, parseJobsCell, parseReservedCell, reservedCell } from '../../src/csvlog/jobs-cell.js';
import type { GpuJob } from '../../src/host/job.js';

const slurm: GpuJob = { kind: 'slurm', id: '4242', user: 'alice', memoryMiB: 81920, smPercent: 45 };
const container: GpuJob = { kind: 'container', id: '3f4e9c1d2b7a', user: 'bob', memoryMiB: 1024 };

describe('jobsCell', () => {
  const cases: [string, Parameters<typeof jobsCell>[0], string][] = [
    ['0: not known is empty', undefined, ''],
    ['1: read, nothing on the GPU', { jobs: [], dropped: 0 }, '-'],
    [
      '2: two jobs, SM % only where known',
      { jobs: [slurm, container], dropped: 0 },
      'slurm:4242:alice:81920:45 container:3f4e9c1d2b7a:bob:1024:',
    ],
    ['3: the jobs not named are counted', { jobs: [slurm], dropped: 2 }, 'slurm:4242:alice:81920:45 +2'],
    [
      '4: separators and control characters in an id are percent-encoded',
      { jobs: [{ kind: 'unit', id: 'a b:c%d\ne', user: '' }], dropped: 0 },
      'unit:a%20b%3Ac%25d%0Ae:::',
    ],
    [
      '5: a comma or quote stays, for the CSV rules to quote',
      { jobs: [{ kind: 'process', id: 'run,"x"', user: 'u' }], dropped: 0 },
      'process:run,"x":u::',
    ],
  ];
  for (const [title, input, expected] of cases) it(title, () => expect(jobsCell(input)).toBe(expected));

  it('reads back what it wrote, through CSV quoting', () => {
    const odd: GpuJob = { kind: 'process', id: 'tr ain,"v2":%x', user: 'we ird' };
    const cell = jobsCell({ jobs: [slurm, odd, container], dropped: 3 });
    const [back] = csvCells(`a,${csvCell(cell)}`)!.slice(1);
    expect(parseJobsCell(back)).toEqual({ jobs: [slurm, odd, container], dropped: 3 });
  });

  it('bounds the cell: at most 8 jobs named, ids and users cut', () => {
    const long = Array.from(
      { length: 12 },
      (_, i): GpuJob => ({ kind: 'unit', id: `${'%'.repeat(80)}${i}`, user: 'u'.repeat(50), memoryMiB: 99999, smPercent: 100 }),
    );
    const cell = jobsCell({ jobs: long, dropped: 5 });
    expect(cell.split(' ')).toHaveLength(9);
    expect(cell.endsWith(' +9')).toBe(true);
    // 8 x ("unit:" + 64 x "%25" + ":" + 32 x "u" + ":99999:100") + " +9"
    expect(cell.length).toBeLessThanOrEqual(8 * (5 + 64 * 3 + 1 + 32 + 10 + 1) + 3);
  });
});

describe('parseJobsCell', () => {
  const cases: [string, string | undefined, ReturnType<typeof parseJobsCell>][] = [
    ['0: empty is not known', '', undefined],
    ['1: - is no job', '-', { jobs: [], dropped: 0 }],
    [
      '2: an unknown kind (a newer version) or a wrong count of parts is counted, not named',
      'vm:1:a:: slurm:1:a: slurm:2:b:10:',
      { jobs: [{ kind: 'slurm', id: '2', user: 'b', memoryMiB: 10 }], dropped: 2 },
    ],
    [
      '3: bad percent-encoding is counted, not named',
      'unit:%zz:a:: unit:ok:a::',
      { jobs: [{ kind: 'unit', id: 'ok', user: 'a' }], dropped: 1 },
    ],
    // An earlier version wrote a process whose name NVML could not read with an empty id: the GPU
    // was held all the same, and must not read as idle and empty.
    ['6: an entry with an empty id still holds the GPU', 'process::alice:1000:', { jobs: [], dropped: 1 }],
    [
      '4: numbers that are no counts are absent, SM capped at 100',
      'slurm:1:a:-5:300',
      { jobs: [{ kind: 'slurm', id: '1', user: 'a', smPercent: 100 }], dropped: 0 },
    ],
    [
      '5: more than 8 entries: the rest counted',
      Array.from({ length: 10 }, (_, i) => `slurm:${i}:a::`).join(' '),
      { jobs: Array.from({ length: 8 }, (_, i) => ({ kind: 'slurm' as const, id: String(i), user: 'a' })), dropped: 2 },
    ],
  ];
  for (const [title, input, expected] of cases) it(title, () => expect(parseJobsCell(input)).toEqual(expected));
});

describe('the reserved cell', () => {
  const jobs = [
    { kind: 'slurm' as const, id: '4242', user: 'alice' },
    { kind: 'pod' as const, id: '7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6', user: 'a b:c' },
  ];

  it('writes kind:id:user entries, +N not named, ?N unknown; "-" for read and none; "" for not read', () => {
    expect(reservedCell(undefined)).toBe('');
    expect(reservedCell({ jobs: [], dropped: 0, unknown: 0 })).toBe('-');
    expect(reservedCell({ jobs, dropped: 2, unknown: 1 })).toBe(
      'slurm:4242:alice pod:7a0e3a4b-1f2c-4d5e-8f90-a1b2c3d4e5f6:a%20b%3Ac +2 ?1',
    );
    // Only unknown: the GPU is not said to be free.
    expect(reservedCell({ jobs: [], dropped: 0, unknown: 3 })).toBe('?3');
  });

  it('reads back what it wrote; a damaged or newer entry is counted, not named; empty is not known', () => {
    for (const found of [
      { jobs, dropped: 2, unknown: 1 },
      { jobs: [], dropped: 0, unknown: 0 },
      { jobs: [], dropped: 0, unknown: 3 },
    ])
      expect(parseReservedCell(reservedCell(found))).toEqual(found);
    expect(parseReservedCell('')).toBeUndefined();
    expect(parseReservedCell('slurm:1:a gpu:x:y mig:1:2:3 slurm:%zz:a')).toEqual({
      jobs: [{ kind: 'slurm', id: '1', user: 'a' }],
      dropped: 3,
      unknown: 0,
    });
  });
});
