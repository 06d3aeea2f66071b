import type { Collection, FailureReason } from '../collection.js';
import { SYSTEM_HOST, type Host } from '../host/host.js';
import { readHostFacts } from './facts.js';
import { diagnose } from './index.js';

/** Failures whose cause the host's own files can show; a timeout or garbage they cannot. */
const EXPLAINABLE: ReadonlySet<FailureReason> = new Set([
  'nvidia_smi_not_found',
  'driver_unreachable',
  'nvml_library_missing',
  'gpu_access_blocked',
  'driver_library_mismatch',
  'insufficient_permissions',
  'no_devices',
  'gpu_lost',
  'nvml_unknown_error',
]);

/**
 * The file checks' share of a failed collect: milliseconds on any sane host, and a stuck read must
 * not carry a timer run past TimeoutStartSec (13 s; collect's --timeout is 10 s).
 */
const QUICK_DEADLINE_MS = 2000;

/**
 * When nvidia-smi failed, the cheap checks (files only, no nvidia-smi) name the likely cause:
 * it goes into the health block as nvidia_gpu_collector_diagnosis{verdict} and into the message.
 */
export async function withDiagnosis(
  collection: Collection,
  host: Host = SYSTEM_HOST,
  signal = AbortSignal.timeout(QUICK_DEADLINE_MS),
): Promise<Collection> {
  const failure = collection.health.failure;
  if (!failure || !EXPLAINABLE.has(failure.reason)) return collection;
  const { facts, unfinished } = await readHostFacts(host, signal);
  const { verdict, checks } = diagnose(facts, undefined, unfinished);
  if (verdict === 'healthy' || verdict === 'nvidia_smi_failed' || verdict === 'unfinished') return collection;
  const summary = checks.find((check) => check.status === 'fail' && check.verdict === verdict)?.summary ?? verdict;
  return { ...collection, health: { ...collection.health, diagnosis: { verdict, summary } } };
}
