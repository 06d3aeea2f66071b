import { describe, expect, it } from 'vitest';
import { defaultTask, parseRunArgs, type RunArgs } from '../../src/commands/run.js';
import { taskNameProblem } from '../../src/commands/task-name.js';

const ARGS: RunArgs = {
  interval: '1s',
  nvidiaSmi: 'nvidia-smi',
  source: 'nvidia-smi',
  nvmlLibrary: 'libnvidia-ml.so.1',
  gpmWindow: '100ms',
  demoHost: 'h200x2-load',
  timeout: '10s',
  excludeFields: [],
  slowFields: false,
  stateDir: '/var/lib/gpu-textfile',
  hostRoot: '/',
};
const START = new Date(2026, 11, 1, 13, 45, 0).getTime();

describe('run: the default task', () => {
  it("is the command's name and the local start time, a valid task name", () => {
    expect(defaultTask('/usr/bin/python3', new Date(START))).toBe('python3-20261201T134500');
    expect(defaultTask('./my train+eval.sh', new Date(START))).toBe('my_train_eval.sh-20261201T134500');
    expect(defaultTask('--', new Date(START))).toBe('job-20261201T134500');
    for (const command of ['/usr/bin/python3', '.hidden', 'x'.repeat(300), 'ü'])
      expect(taskNameProblem(defaultTask(command, new Date(START)))).toBeUndefined();
  });
});

describe('run: options -> plan', () => {
  it('a plan with the defaults; Python told not to buffer its output unless the job says otherwise', () => {
    const plan = parseRunArgs(ARGS, ['python3', 'train.py'], { PATH: '/bin' }, START);
    if (typeof plan === 'string') throw new Error(plan);
    expect([plan.task, plan.intervalMs, plan.fileName, plan.textfileDir, plan.collect.labels]).toEqual([
      'python3-20261201T134500',
      1000,
      'gpu-textfile-run-python3-20261201T134500.prom',
      undefined,
      [['task', 'python3-20261201T134500']],
    ]);
    expect(plan.env).toEqual({ PATH: '/bin', PYTHONUNBUFFERED: '1' });
    const own = parseRunArgs(ARGS, ['python3'], { PYTHONUNBUFFERED: '' }, START);
    expect(typeof own !== 'string' && own.env.PYTHONUNBUFFERED).toBe('');
  });

  it('--source nvml and its library reach the plan run samples with; the demo labels its series as collect does', () => {
    const plan = parseRunArgs({ ...ARGS, source: 'nvml', nvmlLibrary: '/opt/nvml.so' }, ['job'], {}, START);
    if (typeof plan === 'string') throw new Error(plan);
    expect([plan.collect.source, plan.collect.nvmlLibrary, plan.collect.gpmWindowMs]).toEqual(['nvml', '/opt/nvml.so', 100]);
    const demo = parseRunArgs({ ...ARGS, source: 'demo', task: 't' }, ['job'], {}, START);
    if (typeof demo === 'string') throw new Error(demo);
    expect(demo.collect.labels).toEqual([
      ['source', 'demo'],
      ['task', 't'],
    ]);
  });

  it.each([
    [{ interval: '50ms' }, '--interval: "50ms" must be a duration of at least 100ms'],
    [{ timeout: 'soon' }, '--timeout: "soon" is not a duration (use 10, 10s or 500ms)'],
    [{ task: 'a/b' }, `--task: "a/b" must be letters, digits, '.', '_' or '-', starting with a letter or digit`],
    [{ task: 'train-20261201' }, '--task: "train-20261201" must not end in -YYYYMMDD, the archives\' suffix'],
    [{ fileName: 'job.txt' }, '--file-name: "job.txt" must be a plain name ending in .prom (node_exporter reads only those)'],
    // A user's pattern is compiled for the linear-time engine (its `l` flag): src/run/marks.ts.
    [{ mark: '(' }, '--mark: "(" is not a regular expression: Invalid regular expression: /(/l: Unterminated group'],
    [{ source: 'dcgm' }, '--source: "dcgm" is not one of nvidia-smi, demo, nvml'],
    [{ gpmWindow: '1ms' }, '--gpm-window: "1ms" must be a duration from 10ms to 5s'],
  ])('%j is refused: %s', (bad, message) => expect(parseRunArgs({ ...ARGS, ...bad }, ['job'], {}, START)).toBe(message));
});

describe("run: --file-name of collect's files", () => {
  // collect --compat writes nvidia_gpu_dcgm.prom and nvidia_gpu_nvidia_gpu_exporter.prom beside
  // nvidia_gpu.prom: a job's textfile there would be overwritten by collect, and deleted by run.
  it.each(['nvidia_gpu.prom', 'nvidia_gpu_dcgm.prom', 'nvidia_gpu_nvidia_gpu_exporter.prom'])('%s is refused', (fileName) => {
    expect(parseRunArgs({ ...ARGS, fileName }, ['true'], {}, START)).toMatch(
      new RegExp(`^--file-name: ${fileName.replaceAll('.', '\\.')} is (one of )?collect's file`),
    );
  });

  it.each(['train.prom', 'nvidia_gpu_train.prom', 'dcgm.prom'])('%s is a name of its own', (fileName) => {
    expect(parseRunArgs({ ...ARGS, fileName }, ['true'], {}, START)).toMatchObject({ fileName });
  });
});
