// NVIDIA's Xid codes that this tool explains: doctor's kernel-log check, docs/xid.md and the example
// alerts all read this one table (https://docs.nvidia.com/deploy/xid-errors/).

/** What an Xid means, and whose problem it is (NVIDIA's Xid catalogue, abridged). */
export const XID_MEANINGS: Readonly<Record<number, string>> = {
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

/**
 * Xids that mean the hardware needs attention (memory, NVLink, the bus), whatever the application
 * did: examples/alerts.yml's GpuXidHardwareError fires on any of them (a test checks the two agree).
 */
export const HARDWARE_XIDS: readonly number[] = [48, 63, 64, 74, 79, 92, 94, 95];
