import { DOCTOR_CHECKS } from '../doctor/check-ids.js';
import { diagnose, formatDiagnosis } from '../doctor/index.js';
import { readHostFacts } from '../doctor/facts.js';
import { beforeDeadline, LATE } from '../doctor/deadline.js';
import { readKernelLog } from '../doctor/kmsg.js';
import { parseDuration } from './duration.js';
import { hostAt } from '../host/host.js';
import { runSmi } from '../sources/nvidia-smi/run.js';

import type { ArgsOf } from './option-types.js';
import type { DOCTOR_OPTIONS } from './options.js';

export type DoctorArgs = ArgsOf<typeof DOCTOR_OPTIONS>;

/** The one line that says which --only names are no check, or undefined. kernel_module is kernel-module. */
export function onlyProblem(only: readonly string[]): string | undefined {
  const unknown = only.filter((name) => !(DOCTOR_CHECKS as readonly string[]).includes(name.replace(/_/g, '-')));
  if (unknown.length === 0) return undefined;
  return `--only: ${unknown.map((name) => JSON.stringify(name)).join(', ')} ${unknown.length === 1 ? 'is no check' : 'are no checks'}; the checks are ${DOCTOR_CHECKS.join(', ')}`;
}

/** `gpu-textfile doctor`: walks the chain of checks and prints the verdict. Exit 0 when healthy. */
export async function runDoctor(args: DoctorArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const timeoutMs = parseDuration(args.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) {
    io.err.write(`gpu-textfile: --timeout: "${args.timeout}" is not a duration\n`);
    return 2;
  }
  const problem = onlyProblem(args.only);
  if (problem) {
    io.err.write(`gpu-textfile: ${problem}\n`);
    return 2;
  }
  const only = args.only.length > 0 ? args.only.map((name) => name.replace(/_/g, '-')) : undefined;
  // nvidia-smi only for the checks that read it: --only kernel-module need not wait on a hung one.
  const smiNeeded = !only || only.includes('nvidia-smi') || only.includes('persistence-mode');
  const host = hostAt(args.hostRoot);
  // One deadline for everything: file reads are waited for until then, nvidia-smi is killed then.
  const signal = AbortSignal.timeout(timeoutMs);
  const [{ facts, unfinished }, kernelLog, outcome] = await Promise.all([
    readHostFacts(host, signal),
    beforeDeadline(readKernelLog(host, signal), signal),
    smiNeeded
      ? runSmi(args.nvidiaSmi, ['--query-gpu=index,pci.bus_id,persistence_mode', '--format=csv,noheader'], { timeoutMs })
      : undefined,
  ]);
  const late = kernelLog === LATE ? [...unfinished, 'kernelLog'] : unfinished;
  const smi = outcome && { outcome, persistence: outcome.kind === 'ok' ? outcome.stdout.trim().split('\n') : [] };
  const diagnosis = diagnose({ ...facts, kernelLog: kernelLog === LATE ? undefined : kernelLog, smi }, only, late);
  io.out.write(args.json ? `${JSON.stringify(diagnosis, null, 2)}\n` : formatDiagnosis(diagnosis));
  const status = diagnosis.verdict === 'healthy' ? 0 : 1;
  // A read stuck in the kernel (a hung NFS or FUSE mount) keeps Node's event loop alive after the
  // answer is out; the timer, unref'd, fires only then and ends the process with the answer's status.
  if (late.length > 0) setTimeout(() => process.exit(status), 100).unref();
  return status;
}
