import type { Reading } from '../../collection.js';
import { CLOCK_EVENT_REASON_BITS, MIB, type FieldSpec } from '../../fields/field-spec.js';
import type { Result, UintGetter } from './api.js';
import type { FieldReader } from './device-calls.js';

// Every field of the table (src/fields/fields.ts) NVML can answer, and the call that answers it. A reading is
// in base units like nvidia-smi's, and `shown` in nvidia-smi's units (the CSV trail's columns).

const number = (value: number, shown: string): Reading => ({ kind: 'number', value, shown });
const then = <T>(result: Result<T>, reading: (value: T) => Reading): Result<Reading> =>
  result.rc === 0 ? { rc: 0, value: reading(result.value as T) } : { rc: result.rc };

const uint =
  (name: UintGetter, reading: (value: number) => Reading): FieldReader =>
  (c) =>
    then(
      c.once(name, () => c.nvml.uint(name, c.device)),
      reading,
    );
/**
 * An answer that is no value of its kind: a getter that writes 0xFFFFFFFF (or 2^64 - 1, NVML's
 * NVML_VALUE_NOT_AVAILABLE) for "not available" while returning SUCCESS, or a number past what the
 * quantity can be (a utilization of 4294967295 %). Reported as the field's error, never clamped.
 */
export const OUT_OF_RANGE: Reading = { kind: 'error', error: 'unrecognized' };
const UINT32_NONE = 0xffffffff;
const UINT64_NONE = 0xffffffffffffffffn;
/** `reading` for an answer in 0..max (and not the 32-bit "none"); the error otherwise. */
const upTo =
  (max: number, reading: (value: number) => Reading) =>
  (value: number): Reading =>
    value >= 0 && value <= max && value !== UINT32_NONE ? reading(value) : OUT_OF_RANGE;
/** A 64-bit answer, unless it is NVML's "not available". koffi gives one as a number when it fits, else a BigInt. */
const u64 =
  (reading: (value: bigint | number) => Reading) =>
  (value: bigint | number): Reading =>
    BigInt(value) === UINT64_NONE ? OUT_OF_RANGE : reading(value);

// The bounds: a percentage is at most 100 (the fan's may pass it, NVML says: only its "none" is
// refused); a temperature (°C) at most 200, a board's power 20 kW, a clock 100 GHz, a PCIe
// generation 16 and a link 64 lanes: each far past any GPU's, and far below the 32-bit "none".
const SOME = UINT32_NONE - 1;
const percent = upTo(100, (value) => number(value / 100, String(value)));
const fanPercent = upTo(SOME, (value) => number(value / 100, String(value)));
const watts = upTo(20_000_000, (milliwatts) => number(milliwatts / 1000, (milliwatts / 1000).toFixed(2)));
const megahertz = upTo(100_000, (mhz) => number(mhz * 1e6, String(mhz)));
const plainNumber = (value: number) => number(value, String(value));
const plain = upTo(SOME, plainNumber);
const celsius = upTo(200, plainNumber);
const bytes = u64((value) => number(Number(value), String(BigInt(value) / BigInt(MIB))));
/** A yes/no answer: 0 or 1, nothing else. */
const word = (yes: string, no: string) => upTo(1, (value) => number(value ? 1 : 0, value ? yes : no));
const enabled = word('Enabled', 'Disabled');
const yesNo = word('Yes', 'No');
const text = (value: string): Reading => ({ kind: 'text', text: value });
/** A state field's text from NVML's enum value; a value past the known ones is shown as its number. */
const state = (field: FieldSpec, value: number): Reading =>
  value === UINT32_NONE ? OUT_OF_RANGE : text(field.states?.[value] ?? String(value));

/** nvmlDeviceGetFieldValues ids (nvml.h NVML_FI_DEV_*): read together in one call per sample. */
export const FIELD_IDS = { memoryTemperature: 82, powerInstant: 186, recoveryAction: 230 } as const;
const FIELD_ID_LIST = Object.values(FIELD_IDS);

const fieldValue = (id: number, reading: (value: number, field: FieldSpec) => Reading): FieldReader => {
  const at = FIELD_ID_LIST.indexOf(id as never);
  return (c, field) => {
    const all = c.once('fields', () => c.nvml.fieldValues(c.device, FIELD_ID_LIST));
    if (all.rc !== 0) return { rc: all.rc };
    return then(all.value![at]!, (value) => reading(value, field));
  };
};

const memory =
  (part: 'total' | 'reserved' | 'free' | 'used'): FieldReader =>
  (c) =>
    then(
      c.once('memory', () => c.nvml.memory(c.device)),
      (info) => bytes(info[part]),
    );
const utilization =
  (part: 'gpu' | 'memory'): FieldReader =>
  (c) =>
    then(
      c.once('utilization', () => c.nvml.utilization(c.device)),
      (u) => percent(u[part]),
    );
const label =
  (what: 'uuid' | 'name' | 'serial' | 'vbios' | 'busId'): FieldReader =>
  (c) =>
    then(
      c.once(what, () => c.nvml.text(what, c.device)),
      text,
    );
/** nvmlClockType_t: graphics 0, SM 1, memory 2, video 3. */
const clock = (which: 'current' | 'max', type: number): FieldReader => {
  // The key made once: not a new string to hash for every sample.
  const key = `clock.${which}.${type}`;
  return (c) =>
    then(
      c.once(key, () => c.nvml.clock(which, type, c.device)),
      megahertz,
    );
};
const mode =
  (which: 'mig' | 'ecc', index: 0 | 1): FieldReader =>
  (c) =>
    then(
      // A setting: in the daemon mode shared with the MIG reader's own look at the mode (mig.ts).
      c.setting(which, () => c.nvml.twoModes(which, c.device)),
      (modes) => enabled(modes[index]),
    );
const reason =
  (bit: bigint): FieldReader =>
  (c) =>
    then(
      c.once('reasons', () => c.nvml.eventReasons(c.device)),
      (mask) => number(mask & bit ? 1 : 0, mask & bit ? 'Active' : 'Not Active'),
    );
/** nvmlMemoryErrorType_t corrected 0 / uncorrected 1; nvmlEccCounterType_t volatile 0 / aggregate 1. */
const eccCount = u64((n) => number(Number(n), String(n)));
const ecc = (error: number, counter: number): FieldReader => {
  const key = `ecc.${error}.${counter}`;
  return (c) =>
    then(
      c.once(key, () => c.nvml.eccErrors(c.device, error, counter)),
      eccCount,
    );
};
const remapped =
  (index: 0 | 1 | 2 | 3, reading: (value: number) => Reading): FieldReader =>
  (c) =>
    then(
      c.once('remapped', () => c.nvml.remappedRows(c.device)),
      (rows) => reading(rows[index]),
    );
/** nvmlPageRetirementCause_t: multiple single-bit ECC errors 0, a double-bit error 1. */
const retired = (cause: number): FieldReader => {
  const key = `retired.${cause}`;
  return (c) =>
    then(
      c.once(key, () => c.nvml.retiredPages(c.device, cause)),
      plain,
    );
};

/** By FieldSpec.query. Identity fields the source fills itself (index, driver_version) are not here. */
export const FIELD_READERS: Readonly<Record<string, FieldReader>> = {
  uuid: label('uuid'),
  'pci.bus_id': label('busId'),
  vbios_version: label('vbios'),
  serial: label('serial'),
  name: label('name'),
  compute_cap: (c) =>
    then(
      c.once('cc', () => c.nvml.computeCapability(c.device)),
      ([major, minor]) => text(`${major}.${minor}`),
    ),
  'utilization.gpu': utilization('gpu'),
  'utilization.memory': utilization('memory'),
  'utilization.encoder': (c) => then(c.nvml.codecUtilization('encoder', c.device), percent),
  'utilization.decoder': (c) => then(c.nvml.codecUtilization('decoder', c.device), percent),
  'memory.used': memory('used'),
  'memory.total': memory('total'),
  'memory.free': memory('free'),
  'memory.reserved': memory('reserved'),
  'power.draw': uint('PowerUsage', watts),
  'power.draw.instant': fieldValue(FIELD_IDS.powerInstant, watts),
  'power.limit': uint('PowerManagementLimit', watts),
  'enforced.power.limit': uint('EnforcedPowerLimit', watts),
  'power.default_limit': uint('PowerManagementDefaultLimit', watts),
  'power.min_limit': (c) =>
    then(
      c.once('constraints', () => c.nvml.powerLimits(c.device)),
      ([min]) => watts(min),
    ),
  'power.max_limit': (c) =>
    then(
      c.once('constraints', () => c.nvml.powerLimits(c.device)),
      ([, max]) => watts(max),
    ),
  'temperature.gpu': (c) => then(c.nvml.temperature(c.device), celsius),
  'temperature.memory': fieldValue(FIELD_IDS.memoryTemperature, celsius),
  // A margin is signed: below 0 the GPU is past its slowdown temperature.
  'temperature.gpu.tlimit': (c) => then(c.nvml.marginTemperature(c.device), (m) => (Math.abs(m) <= 200 ? plainNumber(m) : OUT_OF_RANGE)),
  'clocks.current.graphics': clock('current', 0),
  'clocks.current.sm': clock('current', 1),
  'clocks.current.memory': clock('current', 2),
  'clocks.current.video': clock('current', 3),
  'clocks.max.graphics': clock('max', 0),
  'clocks.max.sm': clock('max', 1),
  'clocks.max.memory': clock('max', 2),
  'fan.speed': uint('FanSpeed', fanPercent),
  // nvmlPstates_t: 0..15, and 32 for "unknown", which nvidia-smi prints as [N/A].
  pstate: (c) => {
    const result = c.nvml.uint('PerformanceState', c.device);
    return result.rc === 0 && result.value! > 15 ? { rc: 3 } : then(result, (p) => number(p, `P${p}`));
  },
  persistence_mode: uint('PersistenceMode', enabled),
  compute_mode: (c, field) => then(c.nvml.uint('ComputeMode', c.device), (value) => state(field, value)),
  'mig.mode.current': mode('mig', 0),
  'mig.mode.pending': mode('mig', 1),
  'ecc.mode.current': mode('ecc', 0),
  gpu_recovery_action: fieldValue(FIELD_IDS.recoveryAction, (value, field) => state(field, value)),
  'pcie.link.gen.current': uint('CurrPcieLinkGeneration', upTo(16, plainNumber)),
  'pcie.link.gen.max': uint('MaxPcieLinkGeneration', upTo(16, plainNumber)),
  'pcie.link.width.current': uint('CurrPcieLinkWidth', upTo(64, plainNumber)),
  'pcie.link.width.max': uint('MaxPcieLinkWidth', upTo(64, plainNumber)),
  ...Object.fromEntries(Object.entries(CLOCK_EVENT_REASON_BITS).map(([name, bit]) => [`clocks_event_reasons.${name}`, reason(bit)])),
  'ecc.errors.corrected.volatile.total': ecc(0, 0),
  'ecc.errors.uncorrected.volatile.total': ecc(1, 0),
  'ecc.errors.corrected.aggregate.total': ecc(0, 1),
  'ecc.errors.uncorrected.aggregate.total': ecc(1, 1),
  'remapped_rows.correctable': remapped(0, plain),
  'remapped_rows.uncorrectable': remapped(1, plain),
  'remapped_rows.pending': remapped(2, yesNo),
  'remapped_rows.failure': remapped(3, yesNo),
  'retired_pages.single_bit_ecc.count': retired(0),
  'retired_pages.double_bit.count': retired(1),
  'retired_pages.pending': uint('RetiredPagesPendingStatus', yesNo),
};
