import { diagnose, formatDiagnosis } from '../doctor/index.js';
import { readHostFacts } from '../doctor/facts.js';
import { beforeDeadline, LATE } from '../doctor/deadline.js';
import { readKernelLog } from '../doctor/kmsg.js';
import { parseDuration } from '../duration.js';
import { runSmi } from '../nvidia-smi/run.js';

export interface DoctorArgs {
  json: boolean;
  root: string;
  nvidiaSmi: string;
  timeout: string;
  only: string[];
}

/** `gpu-textfile doctor`: walks the chain of checks and prints the verdict. Exit 0 when healthy. */
export async function runDoctor(args: DoctorArgs, io = { out: process.stdout, err: process.stderr }): Promise<number> {
  const timeoutMs = parseDuration(args.timeout);
  if (timeoutMs === undefined || timeoutMs <= 0) {
    io.err.write(`gpu-textfile: --timeout: "${args.timeout}" is not a duration\n`);
    return 2;
  }
  const host = { root: args.root };
  // One deadline for everything: file reads are waited for until then, nvidia-smi is killed then.
  const signal = AbortSignal.timeout(timeoutMs);
  const [{ facts, unfinished }, kernelLog, outcome] = await Promise.all([
    readHostFacts(host, signal),
    beforeDeadline(readKernelLog(host, signal), signal),
    runSmi(args.nvidiaSmi, ['--query-gpu=index,pci.bus_id,persistence_mode', '--format=csv,noheader'], { timeoutMs }),
  ]);
  const late = kernelLog === LATE ? [...unfinished, 'kernelLog'] : unfinished;
  const persistence = outcome.kind === 'ok' ? outcome.stdout.trim().split('\n') : [];
  const diagnosis = diagnose({ ...facts, kernelLog: kernelLog === LATE ? undefined : kernelLog, smi: { outcome, persistence } }, args.only.length ? args.only : undefined, late);
  io.out.write(args.json ? `${JSON.stringify(diagnosis, null, 2)}\n` : formatDiagnosis(diagnosis));
  const status = diagnosis.verdict === 'healthy' ? 0 : 1;
  // A read stuck in the kernel (a hung NFS or FUSE mount) keeps Node's event loop alive after the
  // answer is out; the timer, unref'd, fires only then and ends the process with the answer's status.
  if (late.length > 0) setTimeout(() => process.exit(status), 100).unref();
  return status;
}
