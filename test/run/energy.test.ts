import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { expect, it } from 'vitest';
import { CLI, FAKE_SMI, capture, cliEnv, tempDir } from '../support/helpers.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// A job's energy through the built program, from both sources, on the same steady load: two GPUs at
// 500 W for the 16 s the job lasts. NVML's stand-in counter runs at 500 W (`energy_runs`) and is read
// every 10 s by the daemon mode; the stand-in nvidia-smi replays the same GPUs drawing 500 W. The
// expected energy is worked out here from the load, not from our code: 2 x 500 W x the job's duration.

const H200X2 = capture('h200x2__580.159.04__linux-load');
const WATTS = 500;
/** The job's length: past the daemon mode's 10 s counter cadence, so one fresh reading falls inside it. */
const JOB = ['sleep', '16'];

/** The capture with every GPU drawing WATTS (power.draw and its instant and average twins). */
async function steadyCapture(dir: string): Promise<string> {
  const copy = join(dir, 'capture');
  await cp(H200X2, copy, { recursive: true });
  const file = join(copy, 'query-gpu.csv');
  const [header, ...rows] = (await readFile(file, 'utf8')).trimEnd().split('\n');
  const power = header!.split(', ').flatMap((name, i) => (/^power\.draw(\.average|\.instant)? \[W\]$/.test(name) ? [i] : []));
  expect(power).toHaveLength(3);
  const steady = rows.map((row) =>
    row
      .split(', ')
      .map((cell, i) => (power.includes(i) ? `${WATTS.toFixed(2)} W` : cell))
      .join(', '),
  );
  await writeFile(file, `${[header, ...steady].join('\n')}\n`);
  return copy;
}

/** `gpu-textfile run` of the job with `options`; its --summary-json, read back. */
async function runJob(dir: string, name: string, options: string[], env: Record<string, string>) {
  const json = join(dir, `${name}.json`);
  const result = await execa(
    process.execPath,
    [
      CLI,
      'run',
      '--state-dir',
      join(dir, `state-${name}`),
      '--interval',
      '500ms',
      '--task',
      name,
      '--summary-json',
      json,
      ...options,
      '--',
      ...JOB,
    ],
    { env: cliEnv(env), extendEnv: false, reject: false, timeout: 90_000, stdin: 'ignore' },
  );
  expect([result.exitCode, result.stderr]).toEqual([0, expect.stringContaining(`gpu-textfile run: ${name}: exit status 0`)]);
  return { summary: JSON.parse(await readFile(json, 'utf8')), stderr: result.stderr };
}

it('a steady 2 x 500 W job: the counters (NVML) and power x time (nvidia-smi) both give 2 x 500 W x its duration, within 3 %', async () => {
  const dir = await tempDir();
  const config = join(dir, 'stand-in.conf');
  const steady = [0, 1].flatMap((gpu) => [
    `${gpu}.power_mw=${WATTS * 1000}`,
    `${gpu}.energy_mj=${(gpu + 1) * 1e9}`,
    `${gpu}.energy_runs=1`,
  ]);
  await writeFile(config, standInConfig(H200X2, steady));
  const [nvml, smi] = await Promise.all([
    runJob(dir, 'nvml', ['--source', 'nvml', '--nvml-library', standInLibrary()], { NVML_STAND_IN: config }),
    runJob(dir, 'smi', ['--nvidia-smi', FAKE_SMI], { FAKE_SMI_CAPTURE: await steadyCapture(dir) }),
  ]);
  expect([nvml.summary.energy_from, smi.summary.energy_from]).toEqual(['counter', 'power']);
  for (const { summary } of [nvml, smi]) {
    const expectedWh = (2 * WATTS * summary.duration_seconds) / 3600;
    expect(summary.duration_seconds).toBeGreaterThanOrEqual(16);
    expect(Math.abs(summary.energy_wh / expectedWh - 1), JSON.stringify(summary)).toBeLessThan(0.03);
  }
  expect(Math.abs(nvml.summary.energy_wh / smi.summary.energy_wh - 1)).toBeLessThan(0.03);
  // The counter is read once more when the job ends: power x time covers only the moments before the
  // first sample and after that last read (without it, the 6 s after the 10 s reading, on each GPU), and the line says so.
  expect(nvml.summary.energy_estimated_gpu_seconds).toBeLessThan(5);
  expect(nvml.stderr).toMatch(
    /energy {10}\d\.\d+ Wh \(the boards' energy counters; power x time for the \d+\.\d GPU-s no reading covers\)\n/,
  );
});
