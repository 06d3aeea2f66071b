import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ONE_SHOT_STEPS, runOneShot, type OneShotSteps } from '../../src/collect/one-shot.js';
import { parseCollectArgs } from '../../src/commands/collect.js';
import { COLLECT_OPTIONS } from '../../src/commands/options.js';
import { parseOptions } from '../../src/commands/parse-options.js';
import { hostAt } from '../../src/host/host.js';
import { nvidiaSmiReads } from '../../src/sources/nvidia-smi/source.js';
import { replayRunner } from '../support/capture-replay.js';
import { FIXTURES, tempDir } from '../support/helpers.js';

const CAPTURE = 'h200x2__580.159.04__linux-idle';

/** A plan from collect's own argv, as the command line gives it. */
async function planIn(dir: string, extra: string[] = []) {
  const args = parseOptions(
    COLLECT_OPTIONS,
    [
      '--textfile-dir',
      join(dir, 'textfile'),
      '--state-dir',
      join(dir, 'state'),
      '--host-root',
      join(FIXTURES, 'hosts/process-owners'),
      ...extra,
    ],
    {},
  );
  if (typeof args === 'string') throw new Error(args);
  const plan = parseCollectArgs(args);
  if (typeof plan === 'string') throw new Error(plan);
  return plan;
}

/**
 * Steps that replay a capture and write down, in order, each nvidia-smi call as it starts and the
 * moment the publishing code is asked for.
 */
function tracedSteps(order: string[]): OneShotSteps {
  const replay = replayRunner(CAPTURE);
  return {
    openSource: async () => ({
      reads: () =>
        nvidiaSmiReads(
          (args) => {
            order.push(args[0]!.split('=')[0]!);
            return replay(args);
          },
          hostAt(join(FIXTURES, 'hosts/process-owners')),
        ),
      stream: () => {
        throw new Error('a one-shot run streams nothing');
      },
    }),
    loadPublish: () => {
      order.push('publishing code');
      return ONE_SHOT_STEPS.loadPublish();
    },
  };
}

describe('a one-shot run', () => {
  it('starts both nvidia-smi calls before it loads the publishing code or clears old temp files', async () => {
    const dir = await tempDir();
    // A first run learns the driver's field names (--help-query-gpu); the timed runs are the second and later.
    const said: string[] = [];
    const io = { out: process.stdout, say: (line: string) => said.push(line) };
    expect(await runOneShot(await planIn(dir), io, tracedSteps([]))).toBe(0);
    // What a run killed while writing leaves: removed by the next run, after its calls have started.
    const stale = join(dir, 'textfile', '.nvidia_gpu.prom.0123456789abcdef.tmp');
    writeFileSync(stale, 'half a file');
    const order: string[] = [];
    expect(await runOneShot(await planIn(dir), io, tracedSteps(order))).toBe(0);
    expect(order).toEqual(['--query-gpu', '--query-compute-apps', 'publishing code']);
    expect(said).toEqual([]);
    expect(readdirSync(join(dir, 'textfile'))).toEqual(['nvidia_gpu.prom']);
    expect(readFileSync(join(dir, 'textfile', 'nvidia_gpu.prom'), 'utf8')).toMatch(/^nvidia_gpu_up\{gpu="1",.*\} 1$/m);
  });

  it('with --dry-run too: the calls first, then the publishing code', async () => {
    const dir = await tempDir();
    const order: string[] = [];
    const chunks: string[] = [];
    const out = { write: (chunk: string) => chunks.push(chunk) } as unknown as NodeJS.WritableStream;
    const status = await runOneShot(await planIn(dir, ['--dry-run']), { out, say: () => {} }, tracedSteps(order));
    expect(status).toBe(0);
    // No state yet: the names are learned first (the processes' call starts beside that), then the query, and the driver's CUDA version once.
    expect(order).toEqual(['--help-query-gpu', '--query-compute-apps', 'publishing code', '--query-gpu', '--version']);
    expect(chunks.join('')).toMatch(/^nvidia_gpu_up\{gpu="0",.*\} 1$/m);
  });
});
