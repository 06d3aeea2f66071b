import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FAILURE_REASONS } from '../../../src/collection.js';
import { classifyFailure } from '../../../src/sources/nvidia-smi/failure.js';
import { CAPTURES } from '../../support/helpers.js';

// Every failure capture: what nvidia-smi printed and its exit status -> the reason in the folder name.
const expected: Record<string, keyof typeof FAILURE_REASONS> = {
  'h200x2__580.159.04__gpu-access-blocked': 'gpu_access_blocked',
  'h200x2__580.159.04__nvml-library-missing': 'nvml_library_missing',
  'h200x2__580.159.04__no-devices': 'no_devices',
  'constructed__driver-unreachable': 'driver_unreachable',
  'constructed__nvml-unknown-error': 'nvml_unknown_error',
  'constructed__driver-library-mismatch': 'driver_library_mismatch',
};

describe('classifyFailure', () => {
  it('covers every failure capture', () => {
    const withFailure = readdirSync(CAPTURES).filter((dir) => existsSync(join(CAPTURES, dir, 'fail.txt')));
    expect(withFailure.sort()).toEqual(Object.keys(expected).sort());
  });
  it.each(Object.entries(expected))('%s -> %s', (dir, reason) => {
    const output = readFileSync(join(CAPTURES, dir, 'fail.txt'), 'utf8');
    const code = Number(readFileSync(join(CAPTURES, dir, 'fail.exit'), 'utf8'));
    const failure = classifyFailure({ kind: 'exit', code, output }, 'nvidia-smi --query-gpu');
    expect(failure.reason).toBe(reason);
    expect(failure.message).toContain(output.split('\n')[0]!.trim());
  });
  it('reads exit statuses when the message says nothing', () => {
    expect(classifyFailure({ kind: 'exit', code: 9, output: '' }, 'x').reason).toBe('driver_unreachable');
    expect(classifyFailure({ kind: 'exit', code: 15, output: '' }, 'x').reason).toBe('gpu_lost');
    expect(classifyFailure({ kind: 'exit', code: 3, output: 'Operation not available' }, 'x').reason).toBe('nvidia_smi_failed');
  });
  it('a lost GPU is recognised by its message', () => {
    const output = 'Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error\n';
    expect(classifyFailure({ kind: 'exit', code: 255, output }, 'x').reason).toBe('gpu_lost');
  });
  it('names the other outcomes', () => {
    expect(classifyFailure({ kind: 'not-found', command: 'nvidia-smi' }, 'x').reason).toBe('nvidia_smi_not_found');
    expect(classifyFailure({ kind: 'timeout', afterMs: 10 }, 'x').reason).toBe('timeout');
    expect(classifyFailure({ kind: 'killed', signal: 'SIGSEGV', output: '' }, 'x').reason).toBe('nvidia_smi_failed');
  });
});

describe('classifyFailure messages say what ran and what happened', () => {
  it.each([
    [
      { kind: 'not-found', command: '/usr/bin/nvidia-smi' },
      'nvidia_smi_not_found',
      '/usr/bin/nvidia-smi not found: is the NVIDIA driver installed?',
    ],
    [
      { kind: 'not-executable', command: '/usr/bin/nvidia-smi', message: 'EACCES' },
      'nvidia_smi_not_executable',
      '/usr/bin/nvidia-smi cannot be executed: EACCES',
    ],
    [{ kind: 'timeout', afterMs: 5000 }, 'timeout', 'nvidia-smi --query-gpu did not finish within 5000 ms; killed it'],
    [
      { kind: 'killed', signal: 'SIGSEGV', output: '\n  \n  first words  \nmore\n' },
      'nvidia_smi_failed',
      'nvidia-smi --query-gpu was killed by SIGSEGV: first words',
    ],
    [{ kind: 'exit', code: 3, output: '' }, 'nvidia_smi_failed', 'nvidia-smi --query-gpu exited 3: (no output)'],
  ] as const)('%o', (outcome, reason, message) =>
    expect(classifyFailure(outcome as Parameters<typeof classifyFailure>[0], 'nvidia-smi --query-gpu')).toEqual({ reason, message }),
  );
});
