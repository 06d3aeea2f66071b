import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { checkExposition } from '../../src/exposition/check.js';
import { ONE_SHOT_STEPS, runOneShot, type OneShotSteps } from '../../src/collect/one-shot.js';
import { parseCollectArgs } from '../../src/commands/collect.js';
import { COLLECT_OPTIONS } from '../../src/commands/options.js';
import { parseOptions } from '../../src/commands/parse-options.js';
import { hostAt } from '../../src/host/host.js';
import { nvidiaSmiReads } from '../../src/sources/nvidia-smi/source.js';
import { replayRunner } from '../support/capture-replay.js';
import { CLI, FAKE_BIN, FAKE_SMI, FIXTURES, capture, cliEnv, eventually, runCli, tempDir, madeDir } from '../support/helpers.js';

const CAPTURE = 'h200x2__580.159.04__linux-idle';

/** A plan from collect's own argv, as the command line gives it. */
async function planIn(dir: string, extra: string[] = []) {
  const args = parseOptions(
    COLLECT_OPTIONS,
    [
      '--textfile-dir',
      madeDir(join(dir, 'textfile')),
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

/** Whether process `pid` still exists (signal 0 checks without sending). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

describe('a one-shot run stopped by SIGTERM before its sample is read', () => {
  it('says collector_stopped in every file it owns, releases the lock, ends by SIGTERM, and takes nvidia-smi with it', {
    timeout: 120_000,
  }, async () => {
    const dir = await tempDir();
    const textfile = madeDir(join(dir, 'textfile'));
    const args = ['collect', '--textfile-dir', textfile, '--state-dir', join(dir, 'state'), '--compat', 'dcgm,nvidia_gpu_exporter'];
    const good = await runCli([...args, '--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: capture(CAPTURE) });
    expect(good.exitCode).toBe(0);
    const file = (name: string) => checkExposition(readFileSync(join(textfile, name), 'utf8'));
    const value = (name: string, metric: string) => file(name).samples.find((s) => s.name === metric);
    const lastSuccess = value('nvidia_gpu.prom', 'nvidia_gpu_collector_last_success_timestamp_seconds')?.value;
    expect(file('nvidia_gpu_dcgm.prom').samples.some((s) => s.name.startsWith('DCGM_FI_DEV_'))).toBe(true);

    // test/fixtures/bin/hang, which also writes its pid down when it starts: the test sees it start and end.
    const hang = join(dir, 'hang-nvidia-smi');
    const started = join(dir, 'hang.pid');
    const script = readFileSync(join(FAKE_BIN, 'hang'), 'utf8').replace(/^trap .*$/m, (trap) => `${trap}\necho $$ > '${started}'`);
    writeFileSync(hang, script, { mode: 0o755 });
    const stuck = execa(process.execPath, [CLI, ...args, '--nvidia-smi', hang, '--timeout', '60s'], {
      env: cliEnv(),
      extendEnv: false,
      reject: false,
      timeout: 90_000,
    });
    expect(await eventually(async () => existsSync(started) && readFileSync(started, 'utf8').endsWith('\n'), 60_000)).toBe(true);
    const pid = Number(readFileSync(started, 'utf8'));
    stuck.kill('SIGTERM');
    const result = await stuck;

    expect([result.signal, result.timedOut]).toEqual(['SIGTERM', false]);
    expect(result.stderr).toMatch(
      /^gpu-textfile: collector_stopped: collect was stopped by SIGTERM before its sample was read \(wrote .*nvidia_gpu\.prom with the health block only\)$/,
    );
    const ours = file('nvidia_gpu.prom');
    expect(ours.problems).toEqual([]);
    expect(ours.samples.filter((s) => /^nvidia_gpu_(?!collector_)/.test(s.name))).toEqual([]);
    expect(value('nvidia_gpu.prom', 'nvidia_gpu_collector_error')?.labels).toEqual({ reason: 'collector_stopped' });
    expect(value('nvidia_gpu.prom', 'nvidia_gpu_collector_last_success_timestamp_seconds')?.value).toBe(lastSuccess);
    expect(file('nvidia_gpu_dcgm.prom').samples.filter((s) => s.name.startsWith('DCGM_FI_DEV_'))).toEqual([]);
    expect(value('nvidia_gpu_nvidia_gpu_exporter.prom', 'nvidia_smi_last_collect_success')?.value).toBe(0);
    expect(file('nvidia_gpu_nvidia_gpu_exporter.prom').samples.filter((s) => s.name === 'nvidia_smi_gpu_info')).toEqual([]);
    expect(existsSync(join(textfile, '.nvidia_gpu.prom.lock'))).toBe(false);
    // The guard killed nvidia-smi's group when collect ended.
    expect(await eventually(async () => !alive(pid), 60_000)).toBe(true);
  });
});
