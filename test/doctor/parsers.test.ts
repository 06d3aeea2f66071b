import { describe, expect, it } from 'vitest';
import { parseXids } from '../../src/doctor/checks/kernel-log.js';
import { parseDriverVersion, parseModules } from '../../src/doctor/facts.js';

describe('doctor parsers', () => {
  it.each([
    ['NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  ', '580.159.04'],
    ['NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023', '535.54.03'],
    ['NVRM version: NVIDIA UNIX Kernel Module for aarch64  550.90.07  Release Build', '550.90.07'],
    ['no driver here', undefined],
  ])('parseDriverVersion(%j) = %j', (text, expected) => expect(parseDriverVersion(text)).toBe(expected));

  it('parseModules reads /proc/modules (from the H200 host)', () => {
    expect([
      ...parseModules('nvidia_uvm 1830912 - - Live 0xffffffffc080c000 (O)\nnvidia 14299136 - - Live 0xffffffffc0400000 (O)\n'),
    ]).toEqual(['nvidia_uvm', 'nvidia']);
  });

  it('parseXids reads dmesg and /dev/kmsg lines', () => {
    const log = [
      "[ 8812.311] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
      '4,881,8812311,-;NVRM: Xid (PCI:0000:86:00): 48, pid=2006, name=python3, DBE (double bit error) ECC error.',
      '[    4.110251] NVRM: Persistence mode is deprecated',
    ].join('\n');
    expect(parseXids(log).map((x) => [x.xid, x.device])).toEqual([
      [79, '0000:3b:00'],
      [48, '0000:86:00'],
    ]);
    expect(parseXids(log)[1]!.line).toBe('NVRM: Xid (PCI:0000:86:00): 48, pid=2006, name=python3, DBE (double bit error) ECC error.');
  });
});
