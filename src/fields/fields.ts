/**
 * Every nvidia-smi --query-gpu field we read, described once. The query list, the parser's
 * conversions, the metric families, the CSV columns and the README's metric table all derive
 * from this table: adding a field is one line.
 */
import { ecc, eventReason, eventReasonTime, type FieldSpec, flag, gauge, label, MHZ, MIB, PERCENT } from './field-spec.js';
import { NVML_FIELDS } from './fields-nvml.js';

// What a field is (field-spec.ts) and which fields a run selects (field-select.ts) live beside the table.

const COMPUTE_MODES = ['Default', 'Exclusive_Thread', 'Prohibited', 'Exclusive_Process'] as const;
const RECOVERY_ACTIONS = ['None', 'Reset', 'Reboot', 'Drain_P2P', 'Drain_and_Reset'] as const;

/** The field table. Order here is the order of the --query-gpu list and of the CSV's extra columns. */
export const FIELDS: readonly FieldSpec[] = [
  // Identity: labels on nvidia_gpu_info. index and uuid come first: they name the GPU in every series.
  label('index', 'gpu'),
  label('uuid', 'uuid', ['gpu_uuid']),
  label('pci.bus_id', 'pci_bus_id', ['gpu_bus_id']),
  label('driver_version', 'driver_version'),
  label('vbios_version', 'vbios_version'),
  label('compute_cap', 'compute_cap'),
  label('serial', 'serial', ['gpu_serial']),
  // Free text last: a comma inside a name cannot shift the numeric columns before it.
  label('name', 'name', ['gpu_name']),

  // Utilization
  gauge('utilization.gpu', 'utilization_ratio', 'Share of the last sample period in which a kernel ran on the GPU (0-1).', {
    factor: PERCENT,
    unit: '%',
    csv: 'utilization_percent',
  }),
  gauge(
    'utilization.memory',
    'memory_utilization_ratio',
    'Share of the last sample period in which device memory was read or written (0-1).',
    { factor: PERCENT, unit: '%' },
  ),
  gauge('utilization.encoder', 'encoder_utilization_ratio', 'Video encoder utilization (0-1).', { factor: PERCENT, unit: '%' }),
  gauge('utilization.decoder', 'decoder_utilization_ratio', 'Video decoder utilization (0-1).', { factor: PERCENT, unit: '%' }),

  // Memory
  gauge('memory.used', 'memory_used_bytes', 'Framebuffer memory in use, in bytes.', { factor: MIB, unit: 'MiB', csv: 'memory_used_mib' }),
  gauge('memory.total', 'memory_total_bytes', 'Total framebuffer memory, in bytes.', { factor: MIB, unit: 'MiB', csv: 'memory_total_mib' }),
  gauge('memory.free', 'memory_free_bytes', 'Framebuffer memory free, in bytes.', { factor: MIB, unit: 'MiB' }),
  gauge('memory.reserved', 'memory_reserved_bytes', 'Framebuffer memory reserved by the driver and firmware, in bytes.', {
    factor: MIB,
    unit: 'MiB',
  }),

  // Power
  gauge('power.draw', 'power_draw_watts', 'Power drawn by the board, in watts.', { unit: 'W', csv: 'power_draw_w' }),
  gauge('power.draw.instant', 'power_draw_instant_watts', 'Instantaneous power drawn by the board, in watts.', {
    unit: 'W',
    aliases: ['gpu.power.draw.instant'],
  }),
  gauge('power.limit', 'power_limit_watts', 'Power limit requested for the board, in watts.', {
    unit: 'W',
    aliases: ['gpu.power.requested_limit'],
  }),
  gauge('enforced.power.limit', 'power_enforced_limit_watts', 'Power limit the driver enforces, in watts.', {
    unit: 'W',
    aliases: ['gpu.power.current_limit'],
  }),
  gauge('power.default_limit', 'power_default_limit_watts', 'Default power limit of the board, in watts.', {
    unit: 'W',
    aliases: ['gpu.power.default_limit'],
  }),
  gauge('power.min_limit', 'power_min_limit_watts', 'Lowest power limit that can be set, in watts.', {
    unit: 'W',
    aliases: ['gpu.power.min_limit'],
  }),
  gauge('power.max_limit', 'power_max_limit_watts', 'Highest power limit that can be set, in watts.', {
    unit: 'W',
    aliases: ['gpu.power.max_limit'],
  }),

  // Temperatures
  gauge('temperature.gpu', 'temperature_celsius', 'GPU core temperature, in degrees Celsius.', { unit: 'C', csv: 'temperature_c' }),
  gauge('temperature.memory', 'memory_temperature_celsius', 'HBM memory temperature, in degrees Celsius.', { unit: 'C' }),
  gauge(
    'temperature.gpu.tlimit',
    'temperature_limit_margin_celsius',
    'Headroom to the temperature at which the GPU starts to slow down, in degrees Celsius.',
    { unit: 'C' },
  ),

  // Clocks
  gauge('clocks.current.sm', 'sm_clock_hertz', 'Current SM clock, in hertz.', {
    factor: MHZ,
    unit: 'MHz',
    aliases: ['clocks.sm'],
    csv: 'sm_clock_mhz',
  }),
  gauge('clocks.current.memory', 'memory_clock_hertz', 'Current memory clock, in hertz.', {
    factor: MHZ,
    unit: 'MHz',
    aliases: ['clocks.mem'],
    csv: 'mem_clock_mhz',
  }),
  gauge('clocks.current.graphics', 'graphics_clock_hertz', 'Current graphics clock, in hertz.', {
    factor: MHZ,
    unit: 'MHz',
    aliases: ['clocks.gr'],
  }),
  gauge('clocks.current.video', 'video_clock_hertz', 'Current video clock, in hertz.', {
    factor: MHZ,
    unit: 'MHz',
    aliases: ['clocks.video'],
  }),
  gauge('clocks.max.sm', 'sm_clock_max_hertz', 'Highest SM clock the GPU can run at, in hertz.', { factor: MHZ, unit: 'MHz' }),
  gauge('clocks.max.memory', 'memory_clock_max_hertz', 'Highest memory clock, in hertz.', {
    factor: MHZ,
    unit: 'MHz',
    aliases: ['clocks.max.mem'],
  }),
  gauge('clocks.max.graphics', 'graphics_clock_max_hertz', 'Highest graphics clock, in hertz.', {
    factor: MHZ,
    unit: 'MHz',
    aliases: ['clocks.max.gr'],
  }),

  // Fan, performance state, modes
  gauge('fan.speed', 'fan_speed_ratio', 'Fan speed the driver asks for, as a share of the maximum (0-1).', { factor: PERCENT, unit: '%' }),
  {
    query: 'pstate',
    kind: 'pstate',
    metric: 'nvidia_gpu_performance_state',
    type: 'gauge',
    help: 'Performance state, 0 (P0, fastest) to 15 (P15, slowest).',
  },
  flag('persistence_mode', 'enabled', 'persistence_mode', 'Whether persistence mode is on: 1 on, 0 off.'),
  {
    query: 'compute_mode',
    kind: 'state',
    metric: 'nvidia_gpu_compute_mode',
    type: 'gauge',
    help: 'Compute mode: 1 for the current mode, 0 for the others.',
    stateLabel: 'mode',
    states: COMPUTE_MODES,
  },
  flag('mig.mode.current', 'enabled', 'mig_mode', 'Whether MIG (Multi-Instance GPU) mode is on: 1 on, 0 off.'),
  flag('mig.mode.pending', 'enabled', 'mig_mode_pending', 'MIG mode after the next GPU reset: 1 on, 0 off.'),
  flag('ecc.mode.current', 'enabled', 'ecc_mode', 'Whether ECC is on: 1 on, 0 off.'),
  {
    query: 'gpu_recovery_action',
    kind: 'state',
    metric: 'nvidia_gpu_recovery_action',
    type: 'gauge',
    help: 'Action the driver asks for to recover the GPU: 1 for the current one, 0 for the others.',
    stateLabel: 'action',
    states: RECOVERY_ACTIONS,
  },

  // PCIe link
  gauge('pcie.link.gen.current', 'pcie_link_generation', 'Current PCIe link generation.'),
  gauge('pcie.link.gen.max', 'pcie_link_max_generation', 'Highest PCIe link generation the GPU and system support.'),
  gauge('pcie.link.width.current', 'pcie_link_width_lanes', 'Current PCIe link width, in lanes.'),
  gauge('pcie.link.width.max', 'pcie_link_max_width_lanes', 'Highest PCIe link width, in lanes.'),

  // Clock event reasons (throttling): one family, `reason` label; old drivers call them throttle reasons.
  eventReason('gpu_idle'),
  eventReason('applications_clocks_setting'),
  eventReason('sw_power_cap'),
  eventReason('hw_slowdown'),
  eventReason('hw_thermal_slowdown'),
  eventReason('hw_power_brake_slowdown'),
  eventReason('sw_thermal_slowdown'),
  eventReason('sync_boost'),
  eventReasonTime('sw_power_cap'),
  eventReasonTime('sync_boost'),
  eventReasonTime('sw_thermal_slowdown'),
  eventReasonTime('hw_thermal_slowdown'),
  eventReasonTime('hw_power_brake_slowdown'),

  // Memory health
  ecc('corrected', 'volatile'),
  ecc('uncorrected', 'volatile'),
  ecc('corrected', 'aggregate'),
  ecc('uncorrected', 'aggregate'),
  gauge('remapped_rows.correctable', 'remapped_rows', 'Memory rows remapped, by the kind of error that caused it.', {
    aliases: ['remapped_rows.sbe'],
    labels: { cause: 'correctable' },
  }),
  gauge('remapped_rows.uncorrectable', 'remapped_rows', 'Memory rows remapped, by the kind of error that caused it.', {
    aliases: ['remapped_rows.dbe'],
    labels: { cause: 'uncorrectable' },
  }),
  flag('remapped_rows.pending', 'yes-no', 'remapped_rows_pending', 'Whether a row remapping waits for a GPU reset: 1 yes, 0 no.'),
  flag('remapped_rows.failure', 'yes-no', 'remapped_rows_failure', 'Whether a row remapping has failed: 1 yes, 0 no.'),
  gauge('retired_pages.single_bit_ecc.count', 'retired_pages', 'Memory pages retired, by the kind of error that caused it.', {
    aliases: ['retired_pages.sbe'],
    labels: { cause: 'single_bit_ecc' },
  }),
  gauge('retired_pages.double_bit.count', 'retired_pages', 'Memory pages retired, by the kind of error that caused it.', {
    aliases: ['retired_pages.dbe'],
    labels: { cause: 'double_bit_ecc' },
  }),
  flag('retired_pages.pending', 'yes-no', 'retired_pages_pending', 'Whether a page retirement waits for a reboot: 1 yes, 0 no.'),

  // NVML only (collect --source nvml): absent under nvidia-smi, which has no such fields.
  ...NVML_FIELDS,
];
