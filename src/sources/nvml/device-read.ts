import type { GpuSample, KnownGpu, Reading } from '../../collection.js';
import { FIELDS } from '../../fields/fields.js';
import type { FieldSpec } from '../../fields/field-spec.js';
import type { Result } from './api.js';
import type { DeviceCalls, FieldReader } from './device-calls.js';
import { FIELD_READERS } from './field-readers.js';
import { NVML_ONLY_READERS } from './nvml-only-readers.js';
import { describeReturn, fieldOutcome } from './return-codes.js';

// One GPU read field by field: a failed call is an absent value or a field error, as a cell of
// nvidia-smi's would be; GPU_IS_LOST anywhere takes the whole GPU out, as nvidia-smi isolates it.

/** Every field NVML answers, by FieldSpec.query. */
const READERS: Readonly<Record<string, FieldReader>> = { ...FIELD_READERS, ...NVML_ONLY_READERS };

/**
 * Fields that stay as they are while the driver is loaded: read once per GPU, then kept (the daemon mode
 * reads them every sample otherwise). A GPU lost or NVML failing drops what was kept (source.ts).
 */
const FIXED = new Set([
  'uuid',
  'pci.bus_id',
  'vbios_version',
  'serial',
  'name',
  'compute_cap',
  'clocks.max.sm',
  'clocks.max.memory',
  'clocks.max.graphics',
  'power.default_limit',
  'power.min_limit',
  'power.max_limit',
  'pcie.link.gen.max',
  'pcie.link.width.max',
]);

/**
 * Fields only an administrator or a rare event changes (limits, modes, ECC and page-retirement counts,
 * PCIe replays, thermal headroom, a degraded link's width): the daemon mode reads them on a slower
 * cadence and repeats that reading in between, as DCGM watches such fields less often. On an H200 host
 * these calls were most of a sample's cost (profiled: the margin temperature alone 1.5 ms per GPU; the
 * link width 0.12 ms, persistence and compute modes 0.035 ms together, timed at a 250 ms cadence); a
 * one-shot run reads them every time.
 */
const SETTINGS = new Set([
  'power.limit',
  'enforced.power.limit',
  'temperature.gpu.tlimit',
  'mig.mode.current',
  'mig.mode.pending',
  'ecc.mode.current',
  'ecc.errors.corrected.volatile.total',
  'ecc.errors.uncorrected.volatile.total',
  'ecc.errors.corrected.aggregate.total',
  'ecc.errors.uncorrected.aggregate.total',
  'remapped_rows.correctable',
  'remapped_rows.uncorrectable',
  'remapped_rows.pending',
  'remapped_rows.failure',
  'retired_pages.single_bit_ecc.count',
  'retired_pages.double_bit.count',
  'retired_pages.pending',
  'nvml.pcie.replay_counter',
  'pcie.link.width.current',
  'persistence_mode',
  'compute_mode',
]);

/**
 * Whether a result is kept as the field's answer: a value, or NVML saying the GPU has none. An error
 * (a failed call, or an answer out of range: field-readers.ts) is asked again next time.
 */
const keepable = (result: Result<Reading>): boolean =>
  result.rc === 0 ? result.value?.kind !== 'error' : fieldOutcome(result.rc).kind === 'absent';

/**
 * How each field is read, looked up once per field instead of in three sets and the readers' table
 * for every field of every sample (the daemon mode reads the same fields four times a second).
 */
type Kind = 'fixed' | 'setting' | 'moving';
const KINDS = new Map<string, { reader: FieldReader; kind: Kind }>(
  Object.entries(READERS).map(([query, reader]) => [
    query,
    { reader, kind: FIXED.has(query) ? 'fixed' : SETTINGS.has(query) ? 'setting' : 'moving' },
  ]),
);

/** A field's reading, from what was kept when it is fixed or a setting read recently. */
function readField(calls: DeviceCalls, field: FieldSpec) {
  const { reader, kind } = KINDS.get(field.query)!;
  if (kind !== 'fixed') {
    if (calls.settingsEveryMs <= 0) return reader(calls, field);
    return kind === 'setting' ? readSetting(calls, field, reader) : readMoving(calls, field, reader);
  }
  const fixed = (calls.state.fixed ??= new Map());
  let result = fixed.get(field.query);
  if (!result) {
    result = reader(calls, field);
    if (keepable(result)) fixed.set(field.query, result);
  }
  return result;
}

function readSetting(calls: DeviceCalls, field: FieldSpec, reader: FieldReader) {
  const settings = (calls.state.settings ??= new Map());
  const kept = settings.get(field.query);
  if (kept && calls.now - kept.at < calls.settingsEveryMs) return kept.result;
  const result = reader(calls, field);
  if (keepable(result)) settings.set(field.query, { at: calls.now, result });
  else settings.delete(field.query);
  return result;
}

/**
 * A moving field (utilization, clocks, power) in the daemon mode: read every sample, except that a GPU
 * without it (NOT_SUPPORTED: an H200 has no fan) is asked again only on the settings' cadence. On an
 * H200 host that one unanswered fan query cost 0.38 ms per sample, more than all the answered ones.
 */
function readMoving(calls: DeviceCalls, field: FieldSpec, reader: FieldReader) {
  const kept = calls.state.settings?.get(field.query);
  if (kept && calls.now - kept.at < calls.settingsEveryMs) return kept.result;
  const result = reader(calls, field);
  if (result.rc !== 0 && fieldOutcome(result.rc).kind === 'absent')
    (calls.state.settings ??= new Map()).set(field.query, { at: calls.now, result });
  return result;
}

const UUID_FIELD = FIELDS.find((field) => field.query === 'uuid')!;

/** Fields the source fills without a per-GPU call. */
const OWN_FIELDS = new Set(['index', 'driver_version']);

/** Whether NVML can answer this field. */
export const nvmlAnswers = (field: FieldSpec): boolean => OWN_FIELDS.has(field.query) || READERS[field.query] !== undefined;

/** A GPU that did not answer. */
export type LostGpu = KnownGpu & { message: string };

/** GPU `index`'s sample of `fields` (all answerable by NVML), or why it is lost. */
export function readDevice(
  calls: DeviceCalls,
  index: number,
  fields: readonly FieldSpec[],
  driverVersion: string | undefined,
): GpuSample | { lost: string } {
  const readings = new Map<string, Reading>();
  for (const field of fields) {
    if (field.query === 'index') readings.set('index', { kind: 'text', text: String(index) });
    else if (field.query === 'driver_version')
      readings.set(field.query, driverVersion === undefined ? { kind: 'absent' } : { kind: 'text', text: driverVersion });
    else {
      const result = readField(calls, field);
      if (result.rc === 0) {
        readings.set(field.query, result.value!);
        continue;
      }
      const outcome = fieldOutcome(result.rc);
      if (outcome.kind === 'lost') return { lost: `${field.query}: ${describeReturn(result.rc)}` };
      readings.set(field.query, outcome.kind === 'absent' ? outcome : { kind: 'error', error: outcome.error });
    }
  }
  // The UUID names the GPU in every series: read whether or not it is a field of this run.
  const uuid = readField(calls, UUID_FIELD);
  if (uuid.rc !== 0 || uuid.value?.kind !== 'text') return { lost: `its UUID could not be read: ${describeReturn(uuid.rc)}` };
  return { gpu: String(index), uuid: uuid.value.text, readings };
}
