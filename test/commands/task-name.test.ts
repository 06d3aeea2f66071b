import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { taskNameProblem } from '../../src/commands/task-name.js';
import { FAKE_SMI, capture, runCli, tempDir } from '../support/helpers.js';

const LONG = 'a'.repeat(300);

describe('taskNameProblem', () => {
  it.each([
    ['0: plain', 'train', undefined],
    ['1: dots, dashes, underscores', 'a.b-c_d', undefined],
    ['2: 100 characters', 'a'.repeat(100), undefined],
    [
      '3: a path',
      '../../etc/passwd',
      "--task: \"../../etc/passwd\" must be letters, digits, '.', '_' or '-', starting with a letter or digit",
    ],
    ['4: a slash', 'a/b', "--task: \"a/b\" must be letters, digits, '.', '_' or '-', starting with a letter or digit"],
    [
      '5: a newline, shown escaped on one line',
      'a\nb',
      "--task: \"a\\nb\" must be letters, digits, '.', '_' or '-', starting with a letter or digit",
    ],
    ['6: a leading dot', '.hidden', "--task: \".hidden\" must be letters, digits, '.', '_' or '-', starting with a letter or digit"],
    ['7: 101 characters', 'a'.repeat(101), '--task: 101 characters, at most 100'],
    ['8: 300 characters', LONG, '--task: 300 characters, at most 100'],
    ["9: an archive's suffix", 'train-20261128', '--task: "train-20261128" must not end in -YYYYMMDD, the archives\' suffix'],
    ['10: empty', '', "--task: \"\" must be letters, digits, '.', '_' or '-', starting with a letter or digit"],
  ])('%s', (_, task, expected) => expect(taskNameProblem(task)).toBe(expected));
});

describe('every command that takes --task refuses a bad one at parse time: exit 2, one line, nothing written', () => {
  it.each([
    ['a path', '../../etc/passwd'],
    ['a slash', 'a/b'],
    ['a newline', 'a\nb'],
    ['300 characters', LONG],
  ])('collect --task with %s', async (_, task) => {
    const root = await tempDir();
    const result = await runCli(
      [
        'collect',
        '--textfile-dir',
        join(root, 'tf'),
        '--state-dir',
        join(root, 'state'),
        '--csv-dir',
        join(root, 'csv'),
        '--nvidia-smi',
        FAKE_SMI,
        '--task',
        task,
      ],
      { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') },
    );
    expect({ exit: result.exitCode, stderr: result.stderr }).toEqual({ exit: 2, stderr: `gpu-textfile: ${taskNameProblem(task)}\n` });
    expect(await readdir(root)).toEqual([]);
  });

  it('collect takes GPU_TEXTFILE_TASK to the same rule', async () => {
    const root = await tempDir();
    const result = await runCli(
      ['collect', '--textfile-dir', join(root, 'tf'), '--state-dir', join(root, 'state'), '--csv-dir', join(root, 'csv')],
      { GPU_TEXTFILE_TASK: '../x' },
    );
    expect([result.exitCode, result.stderr.split('\n').length]).toEqual([2, 2]);
    expect(await readdir(root)).toEqual([]);
  });

  it('report --task', async () => {
    const root = await tempDir();
    const out = join(root, 'report.txt');
    const result = await runCli(['report', '--csv-dir', root, '--task', '../x', '--out', out]);
    expect({ exit: result.exitCode, stderr: result.stderr }).toEqual({ exit: 2, stderr: `gpu-textfile: ${taskNameProblem('../x')}\n` });
    expect(await readdir(root)).toEqual([]);
  });
});
