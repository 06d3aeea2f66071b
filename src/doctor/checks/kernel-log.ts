import { result, type Check } from '../types.js';

/** What an Xid means, and whose problem it is (NVIDIA's Xid catalogue, abridged). */
export const XID_MEANINGS: Record<number, string> = {
  8: 'GPU stopped responding (a kernel ran too long, or a hardware fault)',
  13: 'graphics engine exception: usually an application fault (bad memory access in a kernel)',
  31: 'GPU memory page fault: usually an application fault (illegal address)',
  32: 'invalid or corrupted push buffer stream (driver or PCIe problem)',
  43: 'GPU stopped processing: an application was killed for a fault, the GPU is fine',
  45: 'preemptive cleanup after a previous error (a process was killed)',
  48: 'double-bit (uncorrectable) ECC error: the process using that memory was killed',
  61: 'internal micro-controller breakpoint or warning (firmware)',
  62: 'internal micro-controller halt (firmware); a reset is needed',
  63: 'ECC page retirement or row remapping recorded: reset the GPU to apply it',
  64: 'ECC page retirement or row remapping failed: the board may need replacing',
  74: 'NVLink error',
  79: 'GPU has fallen off the bus: power, thermals or seating; it needs a reset or a reboot',
  92: 'high single-bit ECC error rate',
  94: 'contained ECC error: only the affected processes were killed',
  95: 'uncontained ECC error: all processes on the GPU were killed; reset it',
  119: 'GSP firmware timed out',
  120: 'GSP firmware error',
};

export interface Xid {
  xid: number;
  device: string;
  line: string;
}

/** "NVRM: Xid (PCI:0000:3b:00): 79, pid=…, GPU has fallen off the bus." -> Xids; kmsg's "6,1234,…;" prefix allowed. */
export function parseXids(log: string): Xid[] {
  const xids: Xid[] = [];
  for (const line of log.split('\n')) {
    const match = /NVRM: Xid \(([^)]*)\): (\d+)/.exec(line);
    if (match) xids.push({ xid: Number(match[2]), device: match[1]!, line: line.replace(/^\d+,\d+,\d+,[^;]*;/, '').trim() });
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
