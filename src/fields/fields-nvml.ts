import { type FieldSpec, nvmlGauge, PERCENT } from './field-spec.js';

// The fields only the NVML source answers (collect --source nvml), part of the field table in
// src/fields/fields.ts: nvidia-smi's --query-gpu has no such fields, so under it they are absent, not zero.
// Each names the DCGM field that measures the same (docs/metrics.md).

/** nvmlGpuFabricState_t's states after NOT_SUPPORTED (0), which gives no series: NOT_STARTED 1, IN_PROGRESS 2, COMPLETED 3. */
export const FABRIC_STATES = ['Not_Supported', 'Not_Started', 'In_Progress', 'Completed'] as const;

export const NVML_FIELDS: readonly FieldSpec[] = [
  nvmlGauge(
    'energy',
    'energy_joules_total',
    'Energy the board consumed since the driver loaded, in joules.',
    'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION',
    {
      type: 'counter',
      factor: 0.001,
      unit: 'mJ',
    },
  ),
  nvmlGauge(
    'pcie.replay_counter',
    'pcie_replay_errors_total',
    'PCIe packets the GPU had to send again (replays).',
    'DCGM_FI_DEV_PCIE_REPLAY_COUNTER',
    {
      type: 'counter',
    },
  ),
  // GPM (GPU performance monitoring, Hopper and later): shares of the time between two samples.
  nvmlGauge(
    'gpm.graphics_active',
    'graphics_active_ratio',
    'Share of time a graphics or compute context was busy on the graphics or compute pipe (0-1).',
    'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
    {
      factor: PERCENT,
      unit: '%',
    },
  ),
  nvmlGauge(
    'gpm.sm_active',
    'sm_active_ratio',
    'Share of time at least one warp was resident on an SM, averaged over all SMs (0-1).',
    'DCGM_FI_PROF_SM_ACTIVE',
    {
      factor: PERCENT,
      unit: '%',
    },
  ),
  nvmlGauge(
    'gpm.sm_occupancy',
    'sm_occupancy_ratio',
    'Resident warps as a share of the most an SM can hold, averaged over all SMs (0-1).',
    'DCGM_FI_PROF_SM_OCCUPANCY',
    {
      factor: PERCENT,
      unit: '%',
    },
  ),
  nvmlGauge(
    'gpm.tensor_active',
    'tensor_active_ratio',
    'Share of time any tensor core pipe was busy (0-1).',
    'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE',
    {
      factor: PERCENT,
      unit: '%',
    },
  ),
  nvmlGauge(
    'gpm.dram_active',
    'dram_active_ratio',
    'Share of time device memory was sending or receiving data (0-1).',
    'DCGM_FI_PROF_DRAM_ACTIVE',
    {
      factor: PERCENT,
      unit: '%',
    },
  ),
  // PCIe throughput over NVML's 20 ms window, in KB/s (1024 bytes). Opt-in (--slow-fields): each call
  // took 42 ms per direction on an H200 (BENCHMARKS.md), twice a whole sample's other calls.
  ...(['transmit', 'receive'] as const).map((direction, counter) =>
    nvmlGauge(
      `pcie.throughput.${direction}`,
      'pcie_throughput_bytes_per_second',
      'PCIe traffic over the last 20 ms, in bytes per second, by direction as the GPU sees it.',
      counter === 0 ? 'DCGM_FI_DEV_PCIE_TX_THROUGHPUT' : 'DCGM_FI_DEV_PCIE_RX_THROUGHPUT',
      { labels: { direction }, factor: 1024, unit: 'KB/s', slow: true },
    ),
  ),
  // NVSwitch systems (HGX, DGX): the GPU's registration with the NVLink fabric (nvmlDeviceGetGpuFabricInfo).
  // Absent where NVML says the GPU has no fabric: a PCIe card has no state, not "Not Supported".
  nvmlGauge(
    'fabric.state',
    'fabric_state',
    "The GPU's registration with the NVLink fabric (NVSwitch systems): 1 for the current state, 0 for the others.",
    'DCGM_FI_DEV_FABRIC_MANAGER_STATUS',
    { kind: 'state', stateLabel: 'state', states: FABRIC_STATES },
  ),
];
