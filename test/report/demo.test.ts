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
      'idle',
      'imbalance',
      'memory_growth',
    ]);
    expect(report.summary).toMatchObject([{ host: 'demo-node', gpus: 4 }]);
    expect(report.summary[0]!.error_samples).toBeGreaterThan(0);
  });

  it('takes no --csv-dir with --demo, and needs one without it', async () => {
    for (const args of [['report', '--demo', '--csv-dir', '/tmp'], ['report']]) {
      const result = await runCli(args);
      expect([args.join(' '), result.exitCode, result.stderr.split('\n').length]).toEqual([args.join(' '), 2, 2]);
    }
  });
});
