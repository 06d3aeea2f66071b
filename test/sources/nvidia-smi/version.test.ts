import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cudaVersionOf, parseCudaVersion } from '../../../src/sources/nvidia-smi/version.js';
import { CAPTURES } from '../../support/helpers.js';

const recorded = (capture: string) => readFileSync(join(CAPTURES, capture, 'version.txt'), 'utf8');

// Lines pasted from recordings: --version of drivers 580 and 610, -q of 610, and the banner of plain nvidia-smi.
const cases: [title: string, text: string, expected: string | undefined][] = [
  ['0: --version, driver 580', recorded('h200x2__580.159.04__linux-idle'), '13.0'],
  ['1: --version, driver 610 (CUDA UMD version)', recorded('geforce-rtx-2080-super__610.57.04__linux-idle'), '13.3'],
  [
    '2: -q, driver 610',
    'CUDA Version                                           : 13.3 [Deprecated; will be removed in CUDA 14.0. Use CUDA UMD Version instead]',
    '13.3',
  ],
  ['3: the banner', '| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |', '13.0'],
  ['4: none said', 'NVIDIA-SMI version  : 465.27\nDRIVER version      : 465.27\n', undefined],
];

describe('parseCudaVersion', () => {
  it.each(cases)('%s', (_, text, expected) => expect(parseCudaVersion(text)).toBe(expected));
});

describe('cudaVersionOf', () => {
  it("answers '' for a driver that said none or refused --version (ask no more), undefined when the call failed", () => {
    expect(cudaVersionOf({ kind: 'ok', stdout: 'NVIDIA-SMI version  : 465.27\n' })).toBe('');
    expect(cudaVersionOf({ kind: 'exit', code: 2, output: 'Invalid combination of input arguments.' })).toBe('');
    expect(cudaVersionOf({ kind: 'timeout', afterMs: 100 })).toBeUndefined();
  });
});
