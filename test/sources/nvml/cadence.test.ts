import { afterEach, expect, it, vi } from 'vitest';
import { FIELDS } from '../../../src/fields/fields.js';
import { selectFields } from '../../../src/fields/field-select.js';
import type { Nvml } from '../../../src/sources/nvml/api.js';
import { ENERGY_EVERY_MS, GPM_EVERY_MS, readGpus, readPlan, SETTINGS_EVERY_MS, type Kept } from '../../../src/sources/nvml/source.js';

// The daemon mode's cadences, on a fake clock: moving fields every sample, GPM's comparison every
// GPM_EVERY_MS, the energy counter every ENERGY_EVERY_MS, settings and fields the GPU lacks every
// SETTINGS_EVERY_MS. The NVML here is an object
// answering as an H200 would for the calls counted, and NOT_SUPPORTED (3) for every other.

afterEach(() => {
  vi.useRealTimers();
});

function fakeNvml(calls: string[]): Nvml {
  const answers: Record<string, (...args: unknown[]) => unknown> = {
    count: () => ({ rc: 0, value: 1 }),
    handle: () => ({ rc: 0, value: 1n }),
    driverVersion: () => ({ rc: 0, value: '580.159.04' }),
    text: (what) => (what === 'uuid' ? { rc: 0, value: 'GPU-d9041e44-56fa-e7d7-44d1-12664904be3d' } : { rc: 3 }),
    marginTemperature: () => ({ rc: 0, value: 29 }),
    energy: () => ({ rc: 0, value: 1000n }),
    uint: (name) => {
      const value = { PowerUsage: 118730, CurrPcieLinkWidth: 16, PersistenceMode: 1, ComputeMode: 0 }[name as string];
      return value === undefined ? { rc: 3 } : { rc: 0, value };
    },
    twoModes: () => ({ rc: 0, value: [0, 0] }),
    gpmSupported: () => ({ rc: 0, value: true }),
    gpmAlloc: () => ({ rc: 0, value: 1n }),
    gpmTake: () => 0,
    gpmMetrics: () => ({ rc: 0, value: [60, 50, 14, 40, 16].map((value) => ({ rc: 0, value })) }),
  };
  return new Proxy({} as Nvml, {
    get:
      (_, name: string) =>
      (...args: unknown[]) => {
        calls.push(name === 'uint' || name === 'twoModes' ? `${name}.${String(args[0])}` : name);
        return answers[name]?.(...args) ?? { rc: 3 };
      },
  });
}

it('compares GPM every second, reads the energy counter every 10 s, settings and missing fields every 30 s, the rest every sample', async () => {
  vi.useFakeTimers({ toFake: ['Date'] });
  const calls: string[] = [];
  const nvml = fakeNvml(calls);
  const plan = readPlan(selectFields(FIELDS, []));
  const kept: Kept = new Map();
  const timing = { gpmWindowMs: 0, energyEveryMs: ENERGY_EVERY_MS, settingsEveryMs: SETTINGS_EVERY_MS, gpmEveryMs: GPM_EVERY_MS };
  const counted = () => ({
    power: calls.filter((c) => c === 'uint.PowerUsage').length,
    energy: calls.filter((c) => c === 'energy').length,
    headroom: calls.filter((c) => c === 'marginTemperature').length,
    fan: calls.filter((c) => c === 'uint.FanSpeed').length,
    gpm: calls.filter((c) => c === 'gpmMetrics').length,
    // Settings whose calls were timed at a 250 ms cadence on an H200 host: 0.5 ms for the MIG mode
    // (asked by the MIG reader too, and once more before the first read's GPM window), 0.12 ms for
    // the link width, 0.035 ms for the two modes.
    mig: calls.filter((c) => c === 'twoModes.mig').length,
    width: calls.filter((c) => c === 'uint.CurrPcieLinkWidth').length,
    modes: calls.filter((c) => c === 'uint.PersistenceMode' || c === 'uint.ComputeMode').length,
  });
  const seen = [];
  for (const at of [0, 250, 1_000, 5_000, 20_000, 29_000, 31_000]) {
    vi.setSystemTime(1_800_000_000_000 + at);
    const read = await readGpus(nvml, plan, { knownGpus: [] }, kept, timing);
    expect(read.kind).toBe('ok');
    seen.push(counted());
  }
  expect(seen).toEqual([
    { power: 1, energy: 1, headroom: 1, fan: 1, gpm: 1, mig: 2, width: 1, modes: 2 },
    { power: 2, energy: 1, headroom: 1, fan: 1, gpm: 1, mig: 2, width: 1, modes: 2 },
    { power: 3, energy: 1, headroom: 1, fan: 1, gpm: 2, mig: 2, width: 1, modes: 2 },
    { power: 4, energy: 1, headroom: 1, fan: 1, gpm: 3, mig: 2, width: 1, modes: 2 },
    { power: 5, energy: 2, headroom: 1, fan: 1, gpm: 4, mig: 2, width: 1, modes: 2 },
    { power: 6, energy: 2, headroom: 1, fan: 1, gpm: 5, mig: 2, width: 1, modes: 2 },
    { power: 7, energy: 3, headroom: 2, fan: 2, gpm: 6, mig: 3, width: 2, modes: 4 },
  ]);
  // Between comparisons the sample repeats the last one's ratios (the fake's 50 %).
  const read = await readGpus(nvml, plan, { knownGpus: [] }, kept, timing);
  expect(read.kind === 'ok' && read.samples[0]!.readings.get('nvml.gpm.sm_active')).toEqual({ kind: 'number', value: 0.5, shown: '50.0' });
});
