// dcgm-exporter's fields we fill, and its generations (--compat dcgm, dcgm-4.8.3, dcgm-4.9, dcgm-4.10):
// which names, units and labels each writes. The legacy names, types and HELP texts are dcgm-exporter's
// etc/default-counters.csv at 4.5.3-4.8.2 (and dcp-metrics-included.csv for SM_ACTIVE/SM_OCCUPANCY);
// 4.9.0 renamed them to DCGM 4.7's, eleven in base units, and 4.10.0 the PCIe rates. dcgm-exporter's
// 4.9.0/4.10.0 files were not reachable: each new name was checked against DCGM 4.6's headers, and six
// (the three utilization and three framebuffer ratio/byte names) are in none of them, nor is the 4.10.0
// PCIe spelling. Row by row: test/fixtures/compat/dcgm-exporter-4.9-4.10-names.csv and docs/compat.md.

/** One dcgm-exporter field we can fill: from which of our fields (by query), and the factor from our base unit to its unit. */
export interface DcgmField {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  query: string;
  /** Our base-unit value times this is DCGM's (hertz -> MHz: 1e-6; a ratio -> %: 100). */
  scale: number;
  /** The MIG GPU instance's memory that DCGM's GPU_I entity reports for this field (NVML: each MIG device's), in bytes. */
  migMemory?: 'used' | 'free';
  /**
   * Its name from dcgm-exporter 4.9.0 on (DCGM 4.7's), that name's HELP, and the factor from our base unit
   * to that name's unit (4.9.0 moved 11 fields to base units); absent where 4.9.0 kept the name.
   */
  dcgm47?: { name: string; help: string; scale: number };
  /** Its name from 4.10.0 on, where 4.10.0 renamed it again (the PCIe rates). */
  dcgm410?: string;
}

const MHZ = 1e-6;
const MIB = 1 / (1024 * 1024);
/** dcgm-exporter 4.9.0's name of a field, in base units (scale 1) unless told. */
const v47 = (name: string, help: string, scale = 1) => ({ name, help, scale });

/** In default-counters.csv's order; the profiling ratios after, from GPM (Hopper and later, --source nvml). */
export const DCGM_FIELDS: readonly DcgmField[] = [
  {
    name: 'DCGM_FI_DEV_SM_CLOCK',
    type: 'gauge',
    help: 'SM clock frequency (in MHz).',
    query: 'clocks.current.sm',
    scale: MHZ,
    dcgm47: v47('DCGM_FI_DEV_SM_CLOCK_HERTZ', 'SM clock frequency (in Hz).'),
  },
  {
    name: 'DCGM_FI_DEV_MEM_CLOCK',
    type: 'gauge',
    help: 'Memory clock frequency (in MHz).',
    query: 'clocks.current.memory',
    scale: MHZ,
    dcgm47: v47('DCGM_FI_DEV_MEMORY_CLOCK_HERTZ', 'Memory clock frequency (in Hz).'),
  },
  {
    name: 'DCGM_FI_DEV_MEMORY_TEMP',
    type: 'gauge',
    help: 'Memory temperature (in C).',
    query: 'temperature.memory',
    scale: 1,
    dcgm47: v47('DCGM_FI_DEV_MEMORY_TEMP_CELSIUS', 'Memory temperature (in C).'),
  },
  {
    name: 'DCGM_FI_DEV_GPU_TEMP',
    type: 'gauge',
    help: 'GPU temperature (in C).',
    query: 'temperature.gpu',
    scale: 1,
    dcgm47: v47('DCGM_FI_DEV_GPU_TEMP_CELSIUS', 'GPU temperature (in C).'),
  },
  {
    name: 'DCGM_FI_DEV_POWER_USAGE',
    type: 'gauge',
    help: 'Power draw (in W).',
    query: 'power.draw',
    scale: 1,
    dcgm47: v47('DCGM_FI_DEV_BOARD_POWER_WATTS', 'Power draw (in W).'),
  },
  {
    name: 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION',
    type: 'counter',
    help: 'Total energy consumption since boot (in mJ).',
    query: 'nvml.energy',
    scale: 1000,
    dcgm47: v47('DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL', 'Total energy consumption since boot (in J).'),
  },
  {
    name: 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER',
    type: 'counter',
    help: 'Total number of PCIe retries.',
    query: 'nvml.pcie.replay_counter',
    scale: 1,
    dcgm47: v47('DCGM_FI_DEV_PCIE_REPLAY_TOTAL', 'Total number of PCIe retries.'),
  },
  {
    name: 'DCGM_FI_DEV_GPU_UTIL',
    type: 'gauge',
    help: 'GPU utilization (in %).',
    query: 'utilization.gpu',
    scale: 100,
    // DCGM 4.6 has this name for field 203 itself (integer %); 0-1 follows 4.9.0's notes and DCGM 4.7 as
    // surveyed (a new field 1613, a double). Not checked against dcgm-exporter 4.9.0's output.
    dcgm47: v47('DCGM_FI_DEV_GPU_UTIL_RATIO', 'GPU utilization (0-1).'),
  },
  {
    name: 'DCGM_FI_DEV_MEM_COPY_UTIL',
    type: 'gauge',
    help: 'Memory utilization (in %).',
    query: 'utilization.memory',
    scale: 100,
    // This and the next five 4.9.0 names are in no DCGM header reachable (4.6.1's stop at field 1612):
    // from a survey of DCGM 4.7's reference only, unverified.
    dcgm47: v47('DCGM_FI_DEV_MEMORY_UTIL_RATIO', 'Memory utilization (0-1).'),
  },
  {
    name: 'DCGM_FI_DEV_ENC_UTIL',
    type: 'gauge',
    help: 'Encoder utilization (in %).',
    query: 'utilization.encoder',
    scale: 100,
    dcgm47: v47('DCGM_FI_DEV_ENC_UTIL_RATIO', 'Encoder utilization (0-1).'),
  },
  {
    name: 'DCGM_FI_DEV_DEC_UTIL',
    type: 'gauge',
    help: 'Decoder utilization (in %).',
    query: 'utilization.decoder',
    scale: 100,
    dcgm47: v47('DCGM_FI_DEV_DEC_UTIL_RATIO', 'Decoder utilization (0-1).'),
  },
  {
    name: 'DCGM_FI_DEV_FB_FREE',
    type: 'gauge',
    help: 'Framebuffer memory free (in MiB).',
    query: 'memory.free',
    scale: MIB,
    migMemory: 'free',
    dcgm47: v47('DCGM_FI_DEV_FB_FREE_BYTES', 'Framebuffer memory free (in bytes).'),
  },
  {
    name: 'DCGM_FI_DEV_FB_USED',
    type: 'gauge',
    help: 'Framebuffer memory used (in MiB).',
    query: 'memory.used',
    scale: MIB,
    migMemory: 'used',
    dcgm47: v47('DCGM_FI_DEV_FB_USED_BYTES', 'Framebuffer memory used (in bytes).'),
  },
  {
    name: 'DCGM_FI_DEV_FB_RESERVED',
    type: 'gauge',
    help: 'Framebuffer memory reserved (in MiB).',
    query: 'memory.reserved',
    scale: MIB,
    dcgm47: v47('DCGM_FI_DEV_FB_RESERVED_BYTES', 'Framebuffer memory reserved (in bytes).'),
  },
  {
    name: 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for uncorrectable errors',
    query: 'remapped_rows.uncorrectable',
    scale: 1,
    dcgm47: v47('DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL', 'Number of remapped rows for uncorrectable errors'),
  },
  {
    name: 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for correctable errors',
    query: 'remapped_rows.correctable',
    scale: 1,
    dcgm47: v47('DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL', 'Number of remapped rows for correctable errors'),
  },
  {
    name: 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
    type: 'gauge',
    help: 'Whether remapping of rows has failed',
    query: 'remapped_rows.failure',
    scale: 1,
    dcgm47: v47('DCGM_FI_DEV_ROW_REMAP_FAILED', 'Whether remapping of rows has failed'),
  },
  {
    name: 'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
    type: 'gauge',
    help: 'Ratio of time the graphics engine is active.',
    query: 'nvml.gpm.graphics_active',
    scale: 1,
    dcgm47: v47('DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO', 'Ratio of time the graphics engine is active.'),
  },
  {
    name: 'DCGM_FI_PROF_SM_ACTIVE',
    type: 'gauge',
    help: 'The ratio of cycles an SM has at least 1 warp assigned.',
    query: 'nvml.gpm.sm_active',
    scale: 1,
    dcgm47: v47('DCGM_FI_PROF_SM_UTIL_RATIO', 'The ratio of cycles an SM has at least 1 warp assigned.'),
  },
  {
    name: 'DCGM_FI_PROF_SM_OCCUPANCY',
    type: 'gauge',
    help: 'The ratio of number of warps resident on an SM.',
    query: 'nvml.gpm.sm_occupancy',
    scale: 1,
    dcgm47: v47('DCGM_FI_PROF_SM_OCCUPANCY_RATIO', 'The ratio of number of warps resident on an SM.'),
  },
  {
    name: 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE',
    type: 'gauge',
    help: 'Ratio of cycles the tensor (HMMA) pipe is active.',
    query: 'nvml.gpm.tensor_active',
    scale: 1,
    dcgm47: v47('DCGM_FI_PROF_TENSOR_UTIL_RATIO', 'Ratio of cycles the tensor (HMMA) pipe is active.'),
  },
  {
    name: 'DCGM_FI_PROF_DRAM_ACTIVE',
    type: 'gauge',
    help: 'Ratio of cycles the device memory interface is active sending or receiving data.',
    query: 'nvml.gpm.dram_active',
    scale: 1,
    dcgm47: v47('DCGM_FI_PROF_DRAM_UTIL_RATIO', 'Ratio of cycles the device memory interface is active sending or receiving data.'),
  },
  // DCGM's are the profiling module's rates; ours NVML's PCIe throughput over 20 ms (--source nvml
  // --slow-fields), its KB taken as 1024 bytes as in our own file. The same traffic, not the same counter.
  {
    name: 'DCGM_FI_PROF_PCIE_TX_BYTES',
    type: 'gauge',
    help: 'The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.',
    query: 'nvml.pcie.throughput.transmit',
    scale: 1,
    // 4.10.0's spelling from its release notes only (in no DCGM header reachable): unverified.
    dcgm410: 'DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND',
  },
  {
    name: 'DCGM_FI_PROF_PCIE_RX_BYTES',
    type: 'gauge',
    help: 'The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.',
    query: 'nvml.pcie.throughput.receive',
    scale: 1,
    dcgm410: 'DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND',
  },
];

/** One generation of dcgm-exporter's output: which names, and the names of two labels it renamed. */
export interface DcgmProfile {
  /** up to 4.8.x, 4.9.0 (DCGM 4.7's names, base units), 4.10.0 (4.9.0's, the PCIe rates renamed). */
  names: 'legacy' | '4.9' | '4.10';
  /** "Hostname" up to 4.5.3-4.8.2; 4.6.0-4.8.3 renamed it (PR #655). */
  hostnameLabel: 'Hostname' | 'hostname';
  /** The driver's label; 4.9.0 renamed it with DCGM 4.7's field. */
  driverLabel: 'DCGM_FI_DRIVER_VERSION' | 'DCGM_FI_SYSTEM_DRIVER_VERSION';
}

/**
 * The generations --compat names. `dcgm` is what it wrote before there were several: 4.5.3-4.8.2 and
 * earlier, kept as it was for dashboards and rules already written against it.
 */
export const DCGM_PROFILES = {
  dcgm: { names: 'legacy', hostnameLabel: 'Hostname', driverLabel: 'DCGM_FI_DRIVER_VERSION' },
  'dcgm-4.8.3': { names: 'legacy', hostnameLabel: 'hostname', driverLabel: 'DCGM_FI_DRIVER_VERSION' },
  'dcgm-4.9': { names: '4.9', hostnameLabel: 'hostname', driverLabel: 'DCGM_FI_SYSTEM_DRIVER_VERSION' },
  'dcgm-4.10': { names: '4.10', hostnameLabel: 'hostname', driverLabel: 'DCGM_FI_SYSTEM_DRIVER_VERSION' },
} as const satisfies Record<string, DcgmProfile>;

/** The fields as one generation names them: its name, HELP and factor in place of the legacy ones. */
export function profileFields(profile: DcgmProfile): DcgmField[] {
  if (profile.names === 'legacy') return [...DCGM_FIELDS];
  return DCGM_FIELDS.map((field) => {
    const renamed = field.dcgm47 ? { ...field, ...field.dcgm47 } : field;
    return profile.names === '4.10' && field.dcgm410 ? { ...renamed, name: field.dcgm410 } : renamed;
  });
}

/** DCGM_FI_DEV_XID_ERRORS, named DCGM_FI_DEV_XID_ERROR from 4.9.0 on (DCGM 4.7's name for field 230). */
export const xidGaugeName = (profile: DcgmProfile): string =>
  profile.names === 'legacy' ? 'DCGM_FI_DEV_XID_ERRORS' : 'DCGM_FI_DEV_XID_ERROR';
