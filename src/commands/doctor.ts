import { diagnose, formatDiagnosis } from '../doctor/index.js';
import { readHostFacts } from '../doctor/facts.js';
import { readKernelLog } from '../doctor/host.js';
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
  const [facts, kernelLog, outcome] = await Promise.all([
    readHostFacts(host),
    readKernelLog(host),
    runSmi(args.nvidiaSmi, ['--query-gpu=index,pci.bus_id,persistence_mode', '--format=csv,noheader'], { timeoutMs }),
  ]);
  const persistence = outcome.kind === 'ok' ? outcome.stdout.trim().split('\n') : [];
  const diagnosis = diagnose({ ...facts, kernelLog, smi: { outcome, persistence } }, args.only.length ? args.only : undefined);
  io.out.write(args.json ? `${JSON.stringify(diagnosis, null, 2)}\n` : formatDiagnosis(diagnosis));
  return diagnosis.verdict === 'healthy' ? 0 : 1;
}
