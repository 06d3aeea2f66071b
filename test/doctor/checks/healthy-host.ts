import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { NVIDIA_VENDOR, readHostFacts, type HostFacts, type PciDevice } from '../../../src/doctor/facts.js';
import type { SmiOutcome } from '../../../src/sources/nvidia-smi/run.js';
import { hostAt } from '../../../src/host/host.js';
import { FAKE_SMI, FIXTURES, capture } from '../../support/helpers.js';

/** The tree standing in for the healthy 2 x H200 host (see its SOURCE.md). */
export const HEALTHY = join(FIXTURES, 'hosts/h200x2-healthy');

/**
 * The facts doctor reads from the healthy host's tree, its kernel log, and nvidia-smi's answer to
 * doctor's query replayed from the same host's capture: each check's test breaks one of them.
 */
export async function healthyFacts(): Promise<HostFacts> {
  const { facts, unfinished } = await readHostFacts(hostAt(HEALTHY), new AbortController().signal);
  if (unfinished.length > 0) throw new Error(`facts not read: ${unfinished.join(', ')}`);
  const query = ['--query-gpu=index,pci.bus_id,persistence_mode', '--format=csv,noheader'];
  const smi = await execa(FAKE_SMI, query, { env: { FAKE_SMI_CAPTURE: capture('h200x2__580.159.04__linux-idle') }, timeout: 20_000 });
  return {
    ...facts,
    kernelLog: await readFile(join(HEALTHY, 'dev/kmsg'), 'utf8'),
    smi: { outcome: { kind: 'ok', stdout: smi.stdout }, persistence: smi.stdout.trim().split('\n') },
  };
}

/** nvidia-smi's recorded failure in a capture (fail.txt, fail.exit), as run.ts reports an exit. */
export async function recordedFailure(name: string): Promise<SmiOutcome> {
  const [output, code] = await Promise.all([
    readFile(join(capture(name), 'fail.txt'), 'utf8'),
    readFile(join(capture(name), 'fail.exit'), 'utf8'),
  ]);
  return { kind: 'exit', code: Number(code.trim()), output };
}

/** The healthy host's NVIDIA devices, changed. */
export const withNvidia = (facts: HostFacts, change: Partial<PciDevice>): PciDevice[] =>
  facts.pci.map((d) => (d.vendor === NVIDIA_VENDOR ? { ...d, ...change } : d));
