import { describe, expect, it } from 'vitest';
import { addSample, gpuEnergy, newTotals } from '../../src/run/accumulate.js';
import type { RunSample } from '../../src/run/samples.js';

// The board's energy counter is trusted over power x time only where it moves with the power: a
// counter that stops while the GPU draws hundreds of watts (a driver that stopped updating it) cost
// the job the energy of that span (-21 % on a 100 s job stalled for 21 s).

const S = 1000;
const WATTS = 500;
const sample = (seconds: number, energyCounterJ?: number): RunSample => ({
  time: seconds * S,
  gpu: '0',
  uuid: 'GPU-0',
  utilization: 100,
  powerW: WATTS,
  ...(energyCounterJ !== undefined ? { energyCounterJ } : {}),
});

/** 100 s at 500 W, one sample a second, the counter read at each (the board's, in joules) by `counter(second)`. */
function energyOf(counter: (second: number) => number) {
  const totals = newTotals();
  for (let second = 0; second <= 100; second++) addSample(totals, sample(second, counter(second)), 5 * S);
  return gpuEnergy(totals.gpus.get('0')!, { startedAt: 0, endedAt: 100 * S })!;
}

describe('the energy counter against power x time', () => {
  // Worked out from the load: 500 W for 100 s.
  const EXPECTED = WATTS * 100;

  it('a counter that moves with the power is used', () => {
    // 2 % above the power readings (the board's own measure): the counter's, not power x time.
    const energy = energyOf((s) => 1e6 + s * WATTS * 1.02);
    expect(energy.from).toBe('counter');
    expect(energy.joules).toBeCloseTo(EXPECTED * 1.02, 6);
  });

  it('a counter stuck for 21 s while 500 W were drawn is not trusted for that span: power x time there', () => {
    // Stuck from second 20 to 41, then moving on from where it stopped: 21 s of energy never counted.
    const energy = energyOf((s) => 1e6 + (s <= 20 ? s : s <= 41 ? 20 : s - 21) * WATTS);
    expect(energy.joules).toBeCloseTo(EXPECTED, 6);
    // The span power x time covered is said (the summary's "estimated" share): from the last reading
    // before the stall (second 20) to the first after it (42).
    expect(energy.estimatedSeconds).toBeCloseTo(22, 6);
  });

  it('a counter that never moves is not used at all', () => {
    const energy = energyOf(() => 1e6);
    expect([energy.from, energy.joules]).toEqual(['power', EXPECTED]);
  });
});
