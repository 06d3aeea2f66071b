import { XID_MEANINGS } from '../../xid/codes.js';
import { parseXidLine } from '../../xid/parse.js';
import { result, type Check } from '../types.js';

export interface Xid {
  xid: number;
  device: string;
  line: string;
}

/** "NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus." -> Xids; kmsg's "6,1234,…;" prefix allowed. */
export function parseXids(log: string): Xid[] {
  const xids: Xid[] = [];
  for (const line of log.split('\n')) {
    const match = parseXidLine(line);
    if (match) xids.push({ xid: match.xid, device: match.bus, line: line.replace(/^\d+,\d+,\d+,[^;]*;/, '').trim() });
  }
  return xids;
}

/** Recent NVRM lines and Xid errors from the kernel log, each Xid explained. */
export const kernelLog: Check = (facts) => {
  if (facts.kernelLog === undefined)
    return result('kernel_log', 'skip', 'the kernel log (/dev/kmsg) cannot be read here; try: sudo dmesg | grep -e NVRM -e Xid');
  const nvrm = facts.kernelLog.split('\n').filter((line) => line.includes('NVRM'));
  const xids = parseXids(facts.kernelLog);
  if (xids.length === 0)
    return result('kernel_log', 'ok', `no Xid errors (${nvrm.length} NVRM lines)`, {
      evidence: nvrm.slice(-5).map((l) => l.replace(/^\d+,\d+,\d+,[^;]*;/, '').trim()),
    });
  const distinct = [...new Set(xids.map((x) => x.xid))];
  const evidence = [
    ...xids.slice(-10).map((x) => x.line),
    ...distinct.map((xid) => `Xid ${xid}: ${XID_MEANINGS[xid] ?? "see NVIDIA's Xid catalogue"}`),
  ];
  if (distinct.includes(79)) {
    return result('kernel_log', 'fail', 'Xid 79: a GPU fell off the bus', {
      evidence,
      fix: ['reboot (or sudo nvidia-smi -r -i <bus id> once no process uses it)', 'if it recurs: check PSU cables, cooling and seating'],
      verdict: 'gpu_lost',
    });
  }
  return result('kernel_log', 'warn', `Xid errors in the kernel log: ${distinct.join(', ')}`, { evidence });
};
