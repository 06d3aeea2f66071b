import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIELDS } from '../../../src/fields/fields.js';
import { parseHelpQueryGpu, resolveQueryNames } from '../../../src/sources/nvidia-smi/help-query-gpu.js';
import { CAPTURES } from '../../support/helpers.js';

const help = (dir: string) => parseHelpQueryGpu(readFileSync(join(CAPTURES, dir, 'help-query-gpu.txt'), 'utf8'));
const withHelp = readdirSync(CAPTURES).filter((dir) => existsSync(join(CAPTURES, dir, 'help-query-gpu.txt')));

describe('parseHelpQueryGpu', () => {
  it('reads names and aliases, not compute-mode lines', () => {
    const names = help('h200x2__580.159.04__linux-idle');
    expect(names.has('clocks.current.sm')).toBe(true);
    expect(names.has('clocks.sm')).toBe(true);
    expect(names.has('clocks_throttle_reasons.gpu_idle')).toBe(true);
    expect([...names].some((n) => n.includes(':'))).toBe(false);
  });
  it.each(withHelp)('%s: every field of the table resolves to a name the driver lists, or is left out', (dir) => {
    const accepted = help(dir);
    const chosen = resolveQueryNames(FIELDS, accepted);
    expect(chosen.index).toBe('index');
    expect(chosen.uuid).toBe('uuid');
    for (const name of Object.values(chosen)) expect(accepted.has(name)).toBe(true);
  });
  it('an old driver gets the throttle-era names and no event counters', () => {
    const chosen = resolveQueryNames(FIELDS, help('geforce-rtx-2080-super__465.27__linux'));
    expect(chosen['clocks_event_reasons.sw_power_cap']).toBe('clocks_throttle_reasons.sw_power_cap');
    expect(chosen['clocks_event_reasons_counters.sw_power_cap']).toBeUndefined();
    expect(chosen['memory.reserved']).toBeUndefined();
  });
  it('a current driver gets the current names', () => {
    const chosen = resolveQueryNames(FIELDS, help('geforce-rtx-2080-super__610.57.04__linux-idle'));
    expect(chosen['clocks_event_reasons.sw_power_cap']).toBe('clocks_event_reasons.sw_power_cap');
    expect(chosen['clocks_event_reasons_counters.sw_power_cap']).toBe('clocks_event_reasons_counters.sw_power_cap');
  });
});
