import { DOCTOR_CHECKS } from './check-ids.js';
import { container } from './checks/container.js';
import { environ } from './checks/environ.js';
import { deviceNodes } from './checks/device-nodes.js';
import { hybridGraphics } from './checks/hybrid-graphics.js';
import { kernelLog } from './checks/kernel-log.js';
import { kernelModule } from './checks/kernel-module.js';
import { moduleForKernel } from './checks/module-for-kernel.js';
import { nouveau } from './checks/nouveau.js';
import { nvidiaSmi } from './checks/nvidia-smi.js';
import { pciDevice } from './checks/pci-device.js';
import { persistenceMode } from './checks/persistence-mode.js';
import { stuckNvidiaSmi } from './checks/stuck-nvidia-smi.js';
import { versionMatch } from './checks/version-match.js';
import { FACT_SOURCES, type HostFacts } from './facts.js';
import { result, VERDICTS, type Check, type CheckResult, type Verdict } from './types.js';

/**
 * The chain, in the order an expert walks it: first whether this is a container, which changes what
 * everything after means (a container started without the GPU sees neither its device nor its nodes).
 */
export const CHECKS: readonly Check[] = [
  container,
  pciDevice,
  kernelModule,
  moduleForKernel,
  nouveau,
  deviceNodes,
  versionMatch,
  hybridGraphics,
  persistenceMode,
  stuckNvidiaSmi,
  environ,
  nvidiaSmi,
  kernelLog,
];

export interface Diagnosis {
  /** `unfinished`: no check found a cause, and some could not finish before the deadline. */
  verdict: Verdict | 'unfinished';
  checks: CheckResult[];
}

/**
 * Runs a check, and when it looked at a fact that was not read in time, marks it unfinished
 * instead: its answer from the stand-in value would be a guess. Which facts a check reads is seen,
 * not listed by hand (a Proxy notes each one), so a check cannot drift from the list.
 */
function runCheck(check: Check, facts: HostFacts, unfinished: readonly string[]): CheckResult {
  if (unfinished.length === 0) return check(facts);
  const looked = new Set<string | symbol>();
  const watched = new Proxy(facts, {
    get(target, key, receiver) {
      looked.add(key);
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  const answer = check(watched);
  const missing = unfinished.filter((name) => looked.has(name));
  if (missing.length === 0) return answer;
  const sources = [...new Set(missing.map((name) => FACT_SOURCES[name as keyof typeof FACT_SOURCES] ?? name))];
  return result(answer.id, 'unfinished', `not finished: still reading ${sources.join(', ')} when the deadline (--timeout) passed`);
}

/**
 * Facts -> every check's result and the verdict: the most fundamental failure found (VERDICTS is in
 * that order, so nouveau bound instead of nvidia beats "module not loaded", and a container without
 * the GPU beats "device nodes missing").
 */
export function diagnose(facts: HostFacts, only?: readonly string[], unfinished: readonly string[] = []): Diagnosis {
  // --only: the other checks are not run at all, and the verdict speaks of these alone.
  const wanted = only && new Set(only.map((name) => name.replace(/_/g, '-')));
  const checks = CHECKS.filter((_check, i) => !wanted || wanted.has(DOCTOR_CHECKS[i]!)).map((check) => runCheck(check, facts, unfinished));
  const failed = checks.flatMap((r) => (r.status === 'fail' && r.verdict ? [r.verdict] : []));
  const found = failed.sort((a, b) => VERDICTS.indexOf(a) - VERDICTS.indexOf(b))[0];
  if (found) return { verdict: found, checks };
  if (checks.some((r) => r.status === 'unfinished')) return { verdict: 'unfinished', checks };
  const smiFailed = facts.smi !== undefined && facts.smi.outcome.kind !== 'ok' && (!wanted || wanted.has('nvidia-smi'));
  return { verdict: smiFailed ? 'nvidia_smi_failed' : 'healthy', checks };
}

const MARK = { ok: '✓', warn: '!', fail: '✗', skip: '–', unfinished: '?' } as const;

/** One line per check, its evidence indented, and the fix for each failing or warning check. */
export function formatDiagnosis(diagnosis: Diagnosis): string {
  const width = Math.max(...diagnosis.checks.map((c) => c.id.length));
  const lines = diagnosis.checks.flatMap((check) => [
    `${MARK[check.status]} ${check.id.padEnd(width)}  ${check.summary}`,
    ...check.evidence.map((line) => `    ${line}`),
    ...(check.status === 'fail' || check.status === 'warn' ? check.fix.map((line, i) => `    ${i === 0 ? 'fix:' : '    '} ${line}`) : []),
  ]);
  return `${lines.join('\n')}\n\nverdict: ${diagnosis.verdict}\n`;
}
