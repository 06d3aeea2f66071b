import { container } from './checks/container.js';
import { deviceNodes } from './checks/device-nodes.js';
import { hybridGraphics } from './checks/hybrid-graphics.js';
import { kernelLog } from './checks/kernel-log.js';
import { kernelModule } from './checks/kernel-module.js';
import { moduleForKernel } from './checks/module-for-kernel.js';
import { nouveau } from './checks/nouveau.js';
import { nvidiaSmi, persistenceMode } from './checks/nvidia-smi.js';
import { pciDevice } from './checks/pci-device.js';
import { versionMatch } from './checks/version-match.js';
import type { HostFacts } from './facts.js';
import { VERDICTS, type Check, type CheckResult, type Verdict } from './types.js';

/** The chain, in the order an expert walks it. */
export const CHECKS: readonly Check[] = [
  pciDevice,
  kernelModule,
  moduleForKernel,
  nouveau,
  deviceNodes,
  versionMatch,
  container,
  hybridGraphics,
  persistenceMode,
  nvidiaSmi,
  kernelLog,
];

export interface Diagnosis {
  verdict: Verdict;
  checks: CheckResult[];
}

/**
 * Facts -> every check's result and the verdict: the most fundamental failure found (VERDICTS is in
 * that order, so nouveau bound instead of nvidia beats "module not loaded", and a container without
 * the GPU beats "device nodes missing").
 */
export function diagnose(facts: HostFacts, only?: readonly string[]): Diagnosis {
  const checks = CHECKS.map((check) => check(facts)).filter((r) => !only || only.includes(r.id) || only.includes(r.id.replace(/_/g, '-')));
  const failed = checks.flatMap((r) => (r.status === 'fail' && r.verdict ? [r.verdict] : []));
  const verdict = failed.sort((a, b) => VERDICTS.indexOf(a) - VERDICTS.indexOf(b))[0] ?? (facts.smi && facts.smi.outcome.kind !== 'ok' ? 'nvidia_smi_failed' : 'healthy');
  return { verdict, checks };
}

const MARK = { ok: '✓', warn: '!', fail: '✗', skip: '–' } as const;

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
