import type { FieldSpec } from '../fields/field-spec.js';
import type { Host } from '../host/host.js';
import type { CompatName } from '../compat/compat-file.js';
import type { DemoHostName, SourceName } from '../sources/sources.js';
import type { PublishTarget } from '../publish/publish.js';

/** Everything a collect run needs, checked and typed: commands/collect.ts builds it from the options. */
export interface CollectPlan {
  source: SourceName;
  /** With the demo source: which recorded host. */
  demoHost: DemoHostName;
  /** With the nvml source: the library to load. */
  nvmlLibrary: string;
  /** With the nvml source: the one-shot GPM window. */
  gpmWindowMs: number;
  nvidiaSmi: string;
  /** Deadline of one collection's reads. */
  timeoutMs: number;
  host: Host;
  fields: readonly FieldSpec[];
  processes: boolean;
  maxProcesses?: number;
  textfileDir: string;
  fileName: string;
  /** Print the exposition instead of writing anything. */
  dryRun: boolean;
  labels: [string, string][];
  /** --compat: the peer exporters whose names a file of its own each carries (docs/compat.md); empty for none. */
  compat?: readonly CompatName[];
  stateDir: string;
  csv?: { dir: string; task: string };
  /** Daemon mode when set: publish every intervalMs. */
  intervalMs?: number;
  processesIntervalMs: number;
}

/** Where a collect run reports: the exposition with --dry-run, and its one-line messages. */
export interface CollectIo {
  /** Where --dry-run prints. */
  out: PublishTarget['out'];
  say: (line: string) => void;
}
