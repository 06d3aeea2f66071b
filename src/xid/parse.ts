// The kernel log's records and the NVIDIA driver's Xid lines in them: pure parsers.

/** One /dev/kmsg record: "PRIO,SEQ,TS_USEC,FLAGS[,…];MESSAGE" (Documentation/ABI/testing/dev-kmsg). */
export interface KmsgRecord {
  seq: number;
  message: string;
  /** When the kernel logged it, in microseconds since boot (TS_USEC). */
  usec?: number;
}

const RECORD = /^\d+,(\d+),(\d+),[^;]*;(.*)$/;

/**
 * One record's first line -> its sequence number and message; undefined for anything else (the
 * " KEY=value" lines that may follow a record, a line cut short).
 */
export function parseKmsgRecord(line: string): KmsgRecord | undefined {
  const match = RECORD.exec(line);
  if (!match) return undefined;
  const seq = Number(match[1]);
  const usec = Number(match[2]);
  return Number.isSafeInteger(seq) ? { seq, message: match[3]!, ...(Number.isSafeInteger(usec) ? { usec } : {}) } : undefined;
}

/** Records of a text holding one per line (a saved log, or reads of /dev/kmsg joined). */
export const parseKmsgRecords = (text: string): KmsgRecord[] => text.split('\n').flatMap((line) => parseKmsgRecord(line) ?? []);

/** An Xid the driver logged: the code, and the GPU's PCI address as pciKey() writes it. */
export interface XidLine {
  xid: number;
  bus: string;
  /** When it was logged, in Unix seconds, where known (the kernel log's time and the boot time). */
  at?: number;
}

// "NVRM: Xid (PCI:0000:3b:00): 79, pid=…" (current drivers) or "NVRM: Xid (0000:3b:00): 13, …" (older):
// domain, bus and device in hex; the function is left out as the GPU is function 0.
const XID = /NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.[0-7])?\): (\d{1,5})\b/;

/** A kernel message -> the Xid it reports, if it is an NVRM Xid line. */
export function parseXidLine(message: string): XidLine | undefined {
  const match = XID.exec(message);
  return match ? { xid: Number(match[4]), bus: pciKey(match[1]!, match[2]!, match[3]!) } : undefined;
}

/** "0000", "3B", "00" -> "0000:3b:00": one spelling of a GPU's PCI address for the kernel's and nvidia-smi's. */
const pciKey = (domain: string, bus: string, device: string): string =>
  [domain.replace(/^0+(?=[0-9a-f]{4})/i, '').padStart(4, '0'), bus.padStart(2, '0'), device.padStart(2, '0')].join(':').toLowerCase();

/** nvidia-smi's pci.bus_id ("00000000:18:00.0") -> "0000:18:00", as an Xid line names the GPU; undefined if it is not one. */
export function busIdKey(busId: string): string | undefined {
  const match = /^([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.[0-7]$/.exec(busId.trim());
  return match ? pciKey(match[1]!, match[2]!, match[3]!) : undefined;
}
