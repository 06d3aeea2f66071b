// What a field of the table in src/fields/fields.ts is, and the helpers the table writes its rows with: each
// helper stands for a family of alike fields, so the table stays one line per field.

/** How a cell's text becomes a value. */
export type FieldKind =
  | 'number' //   "76.68" -> 76.68 x factor
  | 'enabled' //  "Enabled" / "Disabled" -> 1 / 0
  | 'active' //   "Active" / "Not Active" -> 1 / 0
  | 'yes-no' //   "Yes" / "No" -> 1 / 0
  | 'pstate' //   "P0".."P15" -> 0..15
  | 'state' //    one of `states`, exported as a state set (one series per state, 1 for the current)
  | 'label'; //   identity text, a label on nvidia_gpu_info

export type MetricType = 'gauge' | 'counter';

export interface FieldSpec {
  /** Name sent in --query-gpu on current drivers. */
  readonly query: string;
  /** Other names nvidia-smi accepts or used to accept for the same value (tried when `query` is not). */
  readonly aliases?: readonly string[];
  readonly kind: FieldKind;
  /** Full metric family name; absent for 'label' fields. */
  readonly metric?: string;
  readonly type?: MetricType;
  readonly help?: string;
  /** Fixed labels that tell this field apart inside a shared family, e.g. { reason: 'gpu_idle' }. */
  readonly labels?: Readonly<Record<string, string>>;
  /** Multiply nvidia-smi's number by this to get base units. */
  readonly factor?: number;
  /** nvidia-smi's own unit for the number (documentation, CSV). */
  readonly unit?: string;
  /** For 'label' fields: the label name on nvidia_gpu_info. */
  readonly label?: string;
  /** For 'state' fields: the label that carries the state, and the states always exported. */
  readonly stateLabel?: string;
  readonly states?: readonly string[];
  /** Column name in the CSV trail, when the field is logged there. */
  readonly csv?: string;
  /** Costs the query noticeably more than other fields: left out unless --slow-fields (see BENCHMARKS.md). */
  readonly slow?: boolean;
  /**
   * Only the NVML source answers it (nvidia-smi's --query-gpu has no such field, so that source leaves it
   * out); the name of the DCGM field that measures the same, for the docs.
   */
  readonly nvml?: { dcgm: string };
}

/** Every name a field answers to: its query name first, then its aliases. */
export const fieldNames = (field: FieldSpec): readonly string[] => [field.query, ...(field.aliases ?? [])];

/** Factors from nvidia-smi's units to base units (bytes, hertz, ratios, seconds). */
export const MIB = 1024 * 1024;
export const MHZ = 1e6;
export const PERCENT = 0.01;
const MICROSECOND = 1e-6;

export const label = (query: string, name: string, aliases?: string[]): FieldSpec => ({ query, kind: 'label', label: name, aliases });

export const gauge = (query: string, metric: string, help: string, more: Partial<FieldSpec> = {}): FieldSpec => ({
  query,
  kind: 'number',
  metric: `nvidia_gpu_${metric}`,
  type: 'gauge',
  help,
  ...more,
});

export const flag = (query: string, kind: 'enabled' | 'yes-no', metric: string, help: string): FieldSpec => ({
  query,
  kind,
  metric: `nvidia_gpu_${metric}`,
  type: 'gauge',
  help,
});

const EVENT_REASON_HELP = 'Whether this clock event reason (throttling) is active: 1 active, 0 not.';
export const eventReason = (reason: string): FieldSpec => ({
  query: `clocks_event_reasons.${reason}`,
  aliases: [`clocks_throttle_reasons.${reason}`],
  kind: 'active',
  metric: 'nvidia_gpu_clocks_event_reason_active',
  type: 'gauge',
  help: EVENT_REASON_HELP,
  labels: { reason },
});

const EVENT_TIME_HELP = 'Time clocks were held back by this event reason since the driver loaded, in seconds.';
export const eventReasonTime = (reason: string): FieldSpec => ({
  query: `clocks_event_reasons_counters.${reason}`,
  aliases: [`clocks_throttle_reasons_counters.${reason}`],
  kind: 'number',
  metric: 'nvidia_gpu_clocks_event_reason_seconds_total',
  type: 'counter',
  help: EVENT_TIME_HELP,
  labels: { reason },
  factor: MICROSECOND,
  unit: 'us',
  // Measured on an H200 (driver 580): the five counters add 7 ms to a 52 ms query, 14 %.
  slow: true,
});

// Two families, not one with a counter_type label: sum() over one family then counts each error once
// (the volatile count is part of the aggregate one). Peers split them too (dcgm-exporter's
// DCGM_FI_DEV_ECC_*_VOL_TOTAL and _AGG_TOTAL, nvidia_gpu_exporter's ..._volatile_total and ..._aggregate_total).
const ECC_FAMILIES = {
  aggregate: { metric: 'nvidia_gpu_ecc_errors_total', help: "ECC errors counted over the board's lifetime (aggregate)." },
  volatile: { metric: 'nvidia_gpu_ecc_volatile_errors_total', help: 'ECC errors counted since the driver loaded (volatile).' },
} as const;
export const ecc = (error: 'corrected' | 'uncorrected', counter: 'volatile' | 'aggregate'): FieldSpec => ({
  query: `ecc.errors.${error}.${counter}.total`,
  kind: 'number',
  ...ECC_FAMILIES[counter],
  type: 'counter',
  labels: { error_type: error },
});

/**
 * NVML's clock event reason bits (nvmlClocksEventReason*): the bitmask `clocks_event_reasons.active`
 * prints, whose bits the per-reason fields name one by one.
 */
export const CLOCK_EVENT_REASON_BITS: Readonly<Record<string, bigint>> = {
  gpu_idle: 0x1n,
  applications_clocks_setting: 0x2n,
  sw_power_cap: 0x4n,
  hw_slowdown: 0x8n,
  sync_boost: 0x10n,
  sw_thermal_slowdown: 0x20n,
  hw_thermal_slowdown: 0x40n,
  hw_power_brake_slowdown: 0x80n,
  display_clock_setting: 0x100n,
};

/** A field only NVML answers (see FieldSpec.nvml). */
export const nvmlGauge = (query: string, metric: string, help: string, dcgm: string, more: Partial<FieldSpec> = {}): FieldSpec => ({
  ...gauge(`nvml.${query}`, metric, help, more),
  nvml: { dcgm },
});
