import { result, type Check } from '../types.js';

/**
 * Persistence mode off: each nvidia-smi call then pays the driver's start-up, and GPUs may reinitialize.
 * A warning only. Read from the same nvidia-smi run as the nvidia-smi check (facts.smi.persistence).
 */
export const persistenceMode: Check = (facts) => {
  if (facts.smi?.outcome.kind !== 'ok') return result('persistence_mode', 'skip', 'nvidia-smi did not answer');
  const off = facts.smi.persistence.filter((line) => /Disabled/.test(line));
  if (off.length === 0) return result('persistence_mode', 'ok', 'persistence mode on');
  return result('persistence_mode', 'warn', `persistence mode off on ${off.length} GPU(s): every nvidia-smi call is slower`, {
    evidence: off,
    fix: ['sudo systemctl enable --now nvidia-persistenced   # preferred', 'or: sudo nvidia-smi -pm 1'],
  });
};
