import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stuckNvidiaSmi } from '../../../src/doctor/checks/stuck-nvidia-smi.js';
import { readHostFacts } from '../../../src/doctor/facts.js';
import { hostAt } from '../../../src/host/host.js';
import { FIXTURES } from '../../support/helpers.js';
import { healthyFacts } from './healthy-host.js';

const factsOf = async (name: string) => (await readHostFacts(hostAt(join(FIXTURES, 'hosts', name)), new AbortController().signal)).facts;

describe('stuck-nvidia-smi', () => {
  it('passes where no nvidia-smi sleeps in the driver', async () => {
    expect(stuckNvidiaSmi(await healthyFacts()).status).toBe('ok');
  });

  it('fails on an nvidia-smi in state D, naming its pid, wait channel and age, with what to do; not on one in S, nor another command in D', async () => {
    const check = stuckNvidiaSmi(await factsOf('stuck-nvidia-smi-d-state'));
    expect([check.id, check.status]).toEqual(['stuck_nvidia_smi', 'fail']);
    expect(check.summary).toMatch(/^1 nvidia-smi process\(es\) stuck in the driver \(state D\).*fell off the bus/);
    expect(check.evidence).toEqual(['pid 31220: state D, waiting in request_wait_answer, running for 12 min']);
    expect(check.fix.join('\n')).toMatch(/Xid 79[\s\S]*reboot/);
  });
});
