import { describe, expect, it } from 'vitest';
import { persistenceMode } from '../../../src/doctor/checks/persistence-mode.js';
import { healthyFacts, recordedFailure } from './healthy-host.js';

describe('persistence-mode', () => {
  it('passes with persistence mode enabled on both GPUs', async () => {
    expect(persistenceMode(await healthyFacts()).status).toBe('ok');
  });
  it('warns (never fails) when a GPU has it disabled, naming that GPU', async () => {
    const facts = await healthyFacts();
    const persistence = ['0, 00000000:00:06.0, Enabled', '1, 00000000:00:07.0, Disabled'];
    const check = persistenceMode({ ...facts, smi: { ...facts.smi!, persistence } });
    expect([check.status, check.evidence, check.verdict]).toEqual(['warn', ['1, 00000000:00:07.0, Disabled'], undefined]);
  });
  it('skips when nvidia-smi did not answer', async () => {
    const check = persistenceMode({
      ...(await healthyFacts()),
      smi: { outcome: await recordedFailure('constructed__driver-unreachable'), persistence: [] },
    });
    expect(check.status).toBe('skip');
  });
});
