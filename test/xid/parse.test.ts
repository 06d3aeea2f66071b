import { describe, expect, it } from 'vitest';
import { busIdKey, parseKmsgRecord, parseXidLine } from '../../src/xid/parse.js';

// Lines in the formats the kernel (Documentation/ABI/testing/dev-kmsg) and NVIDIA's driver write them:
// the Xid messages are from NVIDIA's Xid documentation and from logs users posted with their bug reports.
const records: [title: string, line: string, expected: ReturnType<typeof parseKmsgRecord>][] = [
  [
    '0: a record',
    '4,881,8812311000,-;NVRM: Xid (PCI:0000:86:00): 48, pid=2006',
    { seq: 881, message: 'NVRM: Xid (PCI:0000:86:00): 48, pid=2006', usec: 8812311000 },
  ],
  ['1: more flags after the first', '6,1234,5,c,caller=T12;hello', { seq: 1234, message: 'hello', usec: 5 }],
  ['2: a continuation line', ' SUBSYSTEM=pci', undefined],
  ['3: a dmesg line', '[ 8812.311] NVRM: Xid (PCI:0000:3b:00): 79', undefined],
  ['4: cut short before the message', '4,881,8812311000', undefined],
];

const xids: [title: string, message: string, expected: ReturnType<typeof parseXidLine>][] = [
  [
    '0: fell off the bus (current form)',
    "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    { xid: 79, bus: '0000:3b:00' },
  ],
  [
    '1: upper-case hex',
    'NVRM: Xid (PCI:0000:C1:00): 119, pid=1234, name=python, Timeout after 6s of waiting for RPC response',
    { xid: 119, bus: '0000:c1:00' },
  ],
  [
    '2: older form without PCI:',
    'NVRM: Xid (0000:03:00): 13, 0001 00000000 0000a097 00001b0c 00001000 00000000',
    { xid: 13, bus: '0000:03:00' },
  ],
  ['3: with the function', 'NVRM: Xid (PCI:0000:18:00.0): 94, pid=99, Contained: SM (0x1).', { xid: 94, bus: '0000:18:00' }],
  ['4: an NVRM line that is no Xid', 'NVRM: GPU at PCI:0000:3b:00: GPU-3ab9c1f2', undefined],
  ['5: no code after the address', 'NVRM: Xid (PCI:0000:3b:00): pid=1', undefined],
];

const busIds: [title: string, busId: string, expected: string | undefined][] = [
  ['0: nvidia-smi pci.bus_id', '00000000:18:00.0', '0000:18:00'],
  ['1: upper-case hex', '00000000:3B:00.0', '0000:3b:00'],
  ['2: a domain above 0xffff', '00010000:01:00.0', '10000:01:00'],
  ['3: not a bus id', 'N/A', undefined],
];

describe('parseKmsgRecord', () => {
  it.each(records)('%s', (_, line, expected) => expect(parseKmsgRecord(line)).toEqual(expected));
});

describe('parseXidLine', () => {
  it.each(xids)('%s', (_, message, expected) => expect(parseXidLine(message)).toEqual(expected));
});

describe('busIdKey', () => {
  it.each(busIds)('%s', (_, busId, expected) => expect(busIdKey(busId)).toBe(expected));
  it("names a GPU as its Xid line does: nvidia-smi's and the kernel's forms meet", () => {
    expect(busIdKey('00000000:00:06.0')).toBe(parseXidLine('NVRM: Xid (PCI:0000:00:06): 79, pid=1')?.bus);
  });
});
