import type { SmiOutcome } from './run.js';

/** Asks the driver's CUDA version: `nvidia-smi --version`, the cheapest call that prints it. */
export const VERSION_ARGS = ['--version'] as const;

/**
 * `nvidia-smi --version` ("CUDA Version        : 13.0"; from driver 610 "CUDA version : Deprecated, see
 * "CUDA UMD version" instead" and "CUDA UMD version    : 13.3"), `-q` ("CUDA Version : 13.3 [Deprecated; …]")
 * or the banner of plain nvidia-smi ("| … CUDA Version: 13.0 |") -> "13.0"; undefined when it says none.
 */
export function parseCudaVersion(text: string): string | undefined {
  return /CUDA (?:UMD )?Version\s*:\s*(\d{1,4}\.\d{1,4})\b/i.exec(text)?.[1];
}

/**
 * What one `--version` call says: the version, '' when the driver answered without one (an old driver
 * that has no --version: exit 2, ask no more), undefined when the call failed otherwise (timeout, killed,
 * not found: ask again next run).
 */
export function cudaVersionOf(outcome: SmiOutcome): string | undefined {
  if (outcome.kind === 'ok') return parseCudaVersion(outcome.stdout) ?? '';
  return outcome.kind === 'exit' ? '' : undefined;
}
