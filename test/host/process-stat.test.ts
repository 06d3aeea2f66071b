import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProcessStat } from '../../src/host/process-stat.js';
import { FIXTURES } from '../support/helpers.js';

describe('parseProcessStat', () => {
  // Recorded: an nvidia-smi asleep in a FUSE read after SIGKILL (test/fixtures/hosts/stuck-nvidia-smi-d-state/SOURCE.md).
  const line = readFileSync(join(FIXTURES, 'hosts/stuck-nvidia-smi-d-state/proc/31220/stat'), 'utf8');
  it('state and start time, counted from the last )', () => {
    expect(parseProcessStat(line)).toEqual({ comm: 'nvidia-smi', state: 'D', startTicks: '425394' });
    expect(parseProcessStat(line.replace('(nvidia-smi)', '(nv smi) D (x)'))).toEqual({
      comm: 'nv smi) D (x',
      state: 'D',
      startTicks: '425394',
    });
  });
  it('garbage is no process', () => {
    expect(parseProcessStat('')).toBeUndefined();
    expect(parseProcessStat('18454 (cat) D 1')).toBeUndefined();
  });
});
