import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { collect, type CollectOutput } from '../../src/collect/collect.js';
import { FIELDS } from '../../src/fields/fields.js';
import type { FieldSpec } from '../../src/fields/field-spec.js';
import { hostAt } from '../../src/host/host.js';
import { runSmi, type SmiRunner } from '../../src/sources/nvidia-smi/run.js';
import { nvidiaSmiReads } from '../../src/sources/nvidia-smi/source.js';
import type { CollectorState } from '../../src/collect/state.js';
import { CAPTURES, FAKE_SMI, FIXTURES } from './helpers.js';

/** Captures of working GPUs (no failure, no lost GPU). */
export const healthyCaptures = (): string[] =>
  readdirSync(CAPTURES).filter(
    (dir) => existsSync(join(CAPTURES, dir, 'query-gpu.csv')) && !existsSync(join(CAPTURES, dir, 'lost-gpu.txt')),
  );

/** Fixed clock for goldens: 2026-11-29T18:20:00Z. */
export const FIXED_NOW = 1_795_976_400_000;

/** A runner that replays one capture through the stand-in nvidia-smi, logging each call. */
export function replayRunner(captureDir: string, calls: string[][] = []): SmiRunner {
  return (args) => {
    calls.push([...args]);
    return runSmi(FAKE_SMI, args, { timeoutMs: 10_000, env: { FAKE_SMI_CAPTURE: join(CAPTURES, captureDir) } });
  };
}

/** One collection of a capture, with the clock fixed and process owners from a fixture host. */
export function collectCapture(
  captureDir: string,
  options: { state?: CollectorState; fields?: readonly FieldSpec[]; calls?: string[][]; maxProcesses?: number } = {},
): Promise<CollectOutput> {
  const host = hostAt(join(FIXTURES, 'hosts/process-owners'));
  return collect({
    reads: nvidiaSmiReads(replayRunner(captureDir, options.calls), host),
    fields: options.fields ?? FIELDS,
    processes: true,
    maxProcesses: options.maxProcesses,
    state: options.state ?? {},
    host,
    now: () => FIXED_NOW,
  });
}
