import { describe, expect, it } from 'vitest';
import { jobsCell, parseJobsCell } from '../../src/csvlog/jobs-cell.js';
import { jobLines } from '../../src/report/job-formats.js';
import { JobAccount } from '../../src/report/jobs.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 23, 0, 0);

// Anything that moves a terminal's cursor, changes its title or reorders its text: C0 and C1
// controls, DEL, and Unicode's bidirectional overrides and line separators.
// biome-ignore lint/suspicious/noControlCharactersInRegex: the characters looked for.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('job names on a terminal', () => {
  it('a process named with escape sequences, a newline or a bidi override is shown, not obeyed, in the table and the held_idle finding', () => {
    // Any user can name their process so; it reaches the trail through nvidia-smi and the cell round trip.
    const id = 'x\u001b]0;owned\u0007\u001b[2J\nfake row\u202e\u0085';
    const user = 'eve\u001b[31m';
    const cell = jobsCell({ jobs: [{ kind: 'process', id, user, memoryMiB: 100 }], dropped: 0 });
    const jobs = parseJobsCell(cell)!;
    expect(jobs.jobs[0]).toMatchObject({ id, user });
    const account = new JobAccount();
    for (let i = 0; i < 40; i++)
      account.add({ time: T0 + i * MIN, host: 'h', task: 't', gpu: '0', uuid: 'GPU-0', status: 'ok', utilization: 0, jobs });
    const lines = jobLines(
      account.rows(() => MIN),
      (header, body) => [header, ...body].map((cells) => cells.join(' ')),
    );
    expect(lines).toHaveLength(2);
    for (const line of lines) expect(line).not.toMatch(UNPRINTABLE);
    expect(lines[1]).toContain('\\x1b]0;owned\\x07\\x1b[2J\\nfake row\\u202e\\x85');
    const [found] = account.heldIdle(() => MIN);
    expect(found!.summary).not.toMatch(UNPRINTABLE);
    expect(found!.summary).toContain('eve\\x1b[31m');
    // The data keeps the name as it is (JSON and CSV escape it by their own rules).
    expect(found).toMatchObject({ job_id: id, user });
  });
});

describe('the job table', () => {
  it('heads the GPU ids it lists "gpu ids", never "gpus" (a job on GPU 0 read as 0 GPUs)', () => {
    const cell = jobsCell({ jobs: [{ kind: 'slurm', id: '7', user: 'ann', memoryMiB: 100 }], dropped: 0 });
    const account = new JobAccount();
    for (let i = 0; i < 3; i++)
      account.add({
        time: T0 + i * MIN,
        host: 'h',
        task: 't',
        gpu: '0',
        uuid: 'GPU-0',
        status: 'ok',
        utilization: 50,
        jobs: parseJobsCell(cell)!,
      });
    const [header, row] = jobLines(
      account.rows(() => MIN),
      (head, body) => [head, ...body].map((cells) => cells.join('\t')),
    ).map((line) => line.split('\t'));
    expect(header).not.toContain('gpus');
    expect(row![header!.indexOf('gpu ids')]).toBe('0');
  });
});
