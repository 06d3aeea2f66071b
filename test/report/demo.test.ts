import { describe, expect, it } from 'vitest';
import { runCli } from '../support/helpers.js';

describe('report --demo', () => {
  // A newcomer with no history yet sees every kind of finding and the summary at once.
  it('reports on a generated week of a 4-GPU host with a finding of every kind', { timeout: 60_000 }, async () => {
    const result = await runCli(['report', '--demo', '--format', 'json'], {}, 50_000);
    expect({ exit: result.exitCode, stderr: result.stderr }).toEqual({
      exit: 0,
      stderr: expect.stringMatching(
        /^gpu-textfile: demo: \d+ generated rows of a 4-GPU host \(not this host\), in a temporary directory removed afterwards\n$/,
      ),
    });
    const report = JSON.parse(result.stdout) as {
      findings: { kind: string }[];
      summary: { host: string; gpus: number; error_samples: number }[];
    };
    expect([...new Set(report.findings.map((finding) => finding.kind))].sort()).toEqual([
      'collection_gaps',
      'errors',
      'held_idle',
      'idle',
      'imbalance',
      'low_use',
      'memory_growth',
    ]);
    expect(report.summary).toMatchObject([{ host: 'demo-node', gpus: 4 }]);
    expect(report.summary[0]!.error_samples).toBeGreaterThan(0);
  });

  // Issue 39: the demo week carries a jobs column, so per-job accounting shows without a GPU.
  it('names the jobs of the demo week with --by job, none of them above its GPU memory', { timeout: 60_000 }, async () => {
    const result = await runCli(['report', '--demo', '--by', 'job', '--format', 'json'], {}, 50_000);
    expect(result.exitCode).toBe(0);
    const report = JSON.parse(result.stdout) as {
      rows: { job_kind: string; job_id: string; user: string; gpus: string[]; peak_memory_mib?: number }[];
      findings: { kind: string; summary: string }[];
    };
    expect(report.rows.map((row) => `${row.job_kind}:${row.job_id}:${row.user}`).sort()).toEqual([
      'container:3f4e9c1d2b7a:bob',
      'slurm:4242:alice',
      'slurm:4377:carol',
      'unit:triton.service:triton',
    ]);
    const byGpu = await runCli(['report', '--demo', '--by', 'gpu', '--format', 'json'], {}, 50_000);
    const gpus = (JSON.parse(byGpu.stdout) as { rows: { gpu_id: string; peak_memory_used_mib: number }[] }).rows;
    for (const row of report.rows) {
      const peak = gpus.find((gpu) => row.gpus.includes(gpu.gpu_id))?.peak_memory_used_mib;
      expect(row.peak_memory_mib).toBeLessThanOrEqual(peak!);
    }
    expect(report.findings.find((finding) => finding.kind === 'held_idle')?.summary).toMatch(/^held by slurm 4377 \(carol\)/);
  });

  it('takes no --csv-dir with --demo, and needs one without it', async () => {
    for (const args of [['report', '--demo', '--csv-dir', '/tmp'], ['report']]) {
      const result = await runCli(args);
      expect([args.join(' '), result.exitCode, result.stderr.split('\n').length]).toEqual([args.join(' '), 2, 2]);
    }
  });
});
