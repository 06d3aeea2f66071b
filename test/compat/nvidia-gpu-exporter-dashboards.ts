// The PromQL of nvidia_gpu_exporter's two Grafana dashboards, taken as facts from its release 1.14.0
// (docs/grafana/dashboard.json = grafana.com 14574, docs/grafana/dashboard-overview.json = grafana.com 25547):
// every panel target and template variable, with the dashboards' variables $job, $node, $gpu and
// $__rate_interval left in for the test to fill.

/** One panel target: the dashboard, the panel's title (numbered where a panel has several targets), its expression. */
export interface PanelQuery {
  dashboard: '14574' | '25547';
  title: string;
  expr: string;
}

export const PANEL_QUERIES: readonly PanelQuery[] = [
  { dashboard: '14574', title: 'Recovery Action', expr: 'nvidia_smi_gpu_recovery_action{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'Throttling',
    expr: '(sum by(uuid) (nvidia_smi_clocks_event_reasons_sw_power_cap{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_power_cap{uuid="$gpu", instance="$node", job="$job"}) or (sum by(uuid) (nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid) (nvidia_smi_clocks_event_reasons_sw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"}) or (sum by(uuid) (nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid) (nvidia_smi_clocks_event_reasons_hw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"}) or (sum by(uuid) (nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid) (nvidia_smi_clocks_event_reasons_hw_power_brake_slowdown{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_power_brake_slowdown{uuid="$gpu", instance="$node", job="$job"}) or (sum by(uuid) (nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0))',
  },
  {
    dashboard: '14574',
    title: 'ECC Errors (uncorrected)',
    expr: 'sum by(uuid) (nvidia_smi_ecc_errors_uncorrected_aggregate_total{uuid="$gpu", instance="$node", job="$job"}) or sum by(uuid) ({__name__=~"nvidia_smi_ecc_errors_uncorrected_aggregate_.+", uuid="$gpu", instance="$node", job="$job"})',
  },
  { dashboard: '14574', title: 'P-State', expr: 'nvidia_smi_pstate{uuid="$gpu", instance="$node", job="$job"}' },
  { dashboard: '14574', title: 'GPU Info', expr: 'nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}' },
  { dashboard: '14574', title: 'Compute Mode', expr: 'nvidia_smi_compute_mode{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'GPU Util',
    expr: 'sum(nvidia_smi_utilization_gpu_ratio{uuid="$gpu", instance="$node", job="$job"}) or sum(nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0 - 1',
  },
  {
    dashboard: '14574',
    title: 'Power',
    expr: 'nvidia_smi_power_draw_watts{uuid="$gpu", instance="$node", job="$job"} / (nvidia_smi_enforced_power_limit_watts{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_power_limit_watts{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_power_default_limit_watts{uuid="$gpu", instance="$node", job="$job"})',
  },
  {
    dashboard: '14574',
    title: 'Fan',
    expr: 'sum(nvidia_smi_fan_speed_ratio{uuid="$gpu", instance="$node", job="$job"}) or sum(nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0 - 1',
  },
  { dashboard: '14574', title: 'Temperature', expr: 'nvidia_smi_temperature_gpu{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'GPU Clock',
    expr: 'nvidia_smi_clocks_current_graphics_clock_hz{uuid="$gpu", instance="$node", job="$job"} / nvidia_smi_clocks_max_graphics_clock_hz{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Memory Clock',
    expr: 'nvidia_smi_clocks_current_memory_clock_hz{uuid="$gpu", instance="$node", job="$job"} / nvidia_smi_clocks_max_memory_clock_hz{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Memory Alloc',
    expr: 'nvidia_smi_memory_used_bytes{uuid="$gpu", instance="$node", job="$job"} / nvidia_smi_memory_total_bytes{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Memory Util',
    expr: 'sum(nvidia_smi_utilization_memory_ratio{uuid="$gpu", instance="$node", job="$job"}) or sum(nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0 - 1',
  },
  {
    dashboard: '14574',
    title: 'Memory Utilization %',
    expr: 'nvidia_smi_utilization_memory_ratio{uuid="$gpu", instance="$node", job="$job"}',
  },
  { dashboard: '14574', title: 'GPU Utilization %', expr: 'nvidia_smi_utilization_gpu_ratio{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'Throttle Reasons (history) #1',
    expr: 'nvidia_smi_clocks_event_reasons_gpu_idle{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_gpu_idle{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Throttle Reasons (history) #2',
    expr: 'nvidia_smi_clocks_event_reasons_sw_power_cap{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_power_cap{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Throttle Reasons (history) #3',
    expr: 'nvidia_smi_clocks_event_reasons_sw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Throttle Reasons (history) #4',
    expr: 'nvidia_smi_clocks_event_reasons_hw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_thermal_slowdown{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Throttle Reasons (history) #5',
    expr: 'nvidia_smi_clocks_event_reasons_hw_power_brake_slowdown{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_power_brake_slowdown{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Throttle Reasons (history) #6',
    expr: 'nvidia_smi_clocks_event_reasons_applications_clocks_setting{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_applications_clocks_setting{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Throttle Reasons (history) #7',
    expr: 'nvidia_smi_clocks_event_reasons_sync_boost{uuid="$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sync_boost{uuid="$gpu", instance="$node", job="$job"}',
  },
  { dashboard: '14574', title: 'P-State (history)', expr: 'nvidia_smi_pstate{uuid="$gpu", instance="$node", job="$job"}' },
  { dashboard: '14574', title: 'Memory Allocation', expr: 'nvidia_smi_memory_used_bytes{uuid="$gpu", instance="$node", job="$job"}' },
  { dashboard: '14574', title: 'Temperature', expr: 'nvidia_smi_temperature_gpu{uuid="$gpu", instance="$node", job="$job"}' },
  { dashboard: '14574', title: 'Power Draw', expr: 'nvidia_smi_power_draw_watts{uuid="$gpu", instance="$node", job="$job"}' },
  { dashboard: '14574', title: 'Fan Speed %', expr: 'nvidia_smi_fan_speed_ratio{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'Graphics Clock Speed',
    expr: 'nvidia_smi_clocks_current_graphics_clock_hz{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Video Clock Speed',
    expr: 'nvidia_smi_clocks_current_video_clock_hz{uuid="$gpu", instance="$node", job="$job"}',
  },
  { dashboard: '14574', title: 'SM Clock Speed', expr: 'nvidia_smi_clocks_current_sm_clock_hz{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'Memory Clock Speed',
    expr: 'nvidia_smi_clocks_current_memory_clock_hz{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'GPU Processes #1',
    expr: 'nvidia_smi_compute_app_used_memory_bytes{uuid="$gpu", instance="$node", job="$job"} or (nvidia_smi_compute_app_info{uuid="$gpu", instance="$node", job="$job"} * 0)',
  },
  {
    dashboard: '14574',
    title: 'GPU Processes #2',
    expr: '(nvidia_smi_compute_app_used_memory_bytes{uuid="$gpu", instance="$node", job="$job"} or (nvidia_smi_compute_app_info{uuid="$gpu", instance="$node", job="$job"} * 0)) / on(uuid) group_left() nvidia_smi_memory_total_bytes{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Process Memory Over Time',
    expr: 'nvidia_smi_compute_app_used_memory_bytes{uuid="$gpu", instance="$node", job="$job"}',
  },
  { dashboard: '14574', title: 'Process Collection', expr: 'nvidia_smi_compute_apps_last_collect_success{instance="$node", job="$job"}' },
  { dashboard: '14574', title: 'Fabric State', expr: 'nvidia_smi_fabric_state{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'ECC Uncorrected (detail)',
    expr: 'label_replace({__name__=~"nvidia_smi_ecc_errors_uncorrected_.+", uuid="$gpu", instance="$node", job="$job"}, "kind", "$1", "__name__", "nvidia_smi_ecc_errors_uncorrected_(.+)")',
  },
  {
    dashboard: '14574',
    title: 'XID Errors',
    expr: 'sum(nvidia_smi_xid_errors_total{uuid="$gpu", instance="$node", job="$job"}) or sum(nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0',
  },
  {
    dashboard: '14574',
    title: 'Last XID',
    expr: 'time() - max(nvidia_smi_xid_last_timestamp_seconds{uuid="$gpu", instance="$node", job="$job"}) or (sum(nvidia_smi_gpu_info{uuid="$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  { dashboard: '14574', title: 'XID Errors by Code', expr: 'nvidia_smi_xid_errors_total{uuid="$gpu", instance="$node", job="$job"}' },
  {
    dashboard: '14574',
    title: 'PCIe Throughput #1',
    expr: 'nvidia_smi_pcie_throughput_tx_bytes_per_second{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'PCIe Throughput #2',
    expr: 'nvidia_smi_pcie_throughput_rx_bytes_per_second{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Power (energy counter vs sampled) #1',
    expr: 'rate(nvidia_smi_energy_joules_total{uuid="$gpu", instance="$node", job="$job"}[$__rate_interval])',
  },
  {
    dashboard: '14574',
    title: 'Power (energy counter vs sampled) #2',
    expr: 'nvidia_smi_power_draw_watts{uuid="$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '14574',
    title: 'Energy (trailing 24h)',
    expr: 'sum(increase(nvidia_smi_energy_joules_total{uuid="$gpu", instance="$node", job="$job"}[24h])) / 3.6e6',
  },
  {
    dashboard: '14574',
    title: 'MIG Memory Used',
    expr: '(nvidia_smi_mig_memory_used_bytes{uuid="$gpu", instance="$node", job="$job"}) * on(uuid, gpu_instance_id) group_left(profile) (max by (uuid, gpu_instance_id, profile) (label_replace(nvidia_smi_mig_info{uuid="$gpu", instance="$node", job="$job"}, "profile", "$1", "profile", "^[0-9]+c\\\\.(.*)$")))',
  },
  {
    dashboard: '14574',
    title: 'MIG SM Activity',
    expr: '(nvidia_smi_mig_sm_activity_ratio{uuid="$gpu", instance="$node", job="$job"}) * on(uuid, gpu_instance_id) group_left(profile) (max by (uuid, gpu_instance_id, profile) (label_replace(nvidia_smi_mig_info{uuid="$gpu", instance="$node", job="$job"}, "profile", "$1", "profile", "^[0-9]+c\\\\.(.*)$")))',
  },
  {
    dashboard: '14574',
    title: 'MIG Tensor Activity',
    expr: '(nvidia_smi_mig_tensor_activity_ratio{uuid="$gpu", instance="$node", job="$job"}) * on(uuid, gpu_instance_id) group_left(profile) (max by (uuid, gpu_instance_id, profile) (label_replace(nvidia_smi_mig_info{uuid="$gpu", instance="$node", job="$job"}, "profile", "$1", "profile", "^[0-9]+c\\\\.(.*)$")))',
  },
  {
    dashboard: '25547',
    title: 'GPUs #1',
    expr: 'label_join(label_replace(label_join(nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}, "ni", " #", "name", "index"), "us", "($1)", "uuid", "^(........).*"), "gpu_label", " ", "ni", "us")',
  },
  {
    dashboard: '25547',
    title: 'GPUs #2',
    expr: '(nvidia_smi_utilization_gpu_ratio{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  {
    dashboard: '25547',
    title: 'GPUs #3',
    expr: '(nvidia_smi_memory_used_bytes{uuid=~"$gpu", instance="$node", job="$job"} / nvidia_smi_memory_total_bytes{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  {
    dashboard: '25547',
    title: 'GPUs #4',
    expr: '(nvidia_smi_temperature_gpu{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  {
    dashboard: '25547',
    title: 'GPUs #5',
    expr: '(nvidia_smi_power_draw_watts{uuid=~"$gpu", instance="$node", job="$job"} / ((nvidia_smi_enforced_power_limit_watts{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_power_limit_watts{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_power_default_limit_watts{uuid=~"$gpu", instance="$node", job="$job"}) > 0)) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  {
    dashboard: '25547',
    title: 'GPUs #6',
    expr: '(nvidia_smi_pstate{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  {
    dashboard: '25547',
    title: 'GPUs #7',
    expr: '(sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_sw_power_cap{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_power_cap{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_sw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_hw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_hw_power_brake_slowdown{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_power_brake_slowdown{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0))',
  },
  {
    dashboard: '25547',
    title: 'GPUs #8',
    expr: '(sum by(uuid, instance, job) (nvidia_smi_ecc_errors_uncorrected_aggregate_total{uuid=~"$gpu", instance="$node", job="$job"}) or sum by(uuid, instance, job) ({__name__=~"nvidia_smi_ecc_errors_uncorrected_aggregate_.+", uuid=~"$gpu", instance="$node", job="$job"})) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  {
    dashboard: '25547',
    title: 'GPUs #9',
    expr: '(nvidia_smi_gpu_recovery_action{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0 - 1)',
  },
  {
    dashboard: '25547',
    title: 'GPU Utilization %',
    expr: '(nvidia_smi_utilization_gpu_ratio{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Memory Activity %',
    expr: '(nvidia_smi_utilization_memory_ratio{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'VRAM Allocated %',
    expr: '(nvidia_smi_memory_used_bytes{uuid=~"$gpu", instance="$node", job="$job"} / nvidia_smi_memory_total_bytes{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'VRAM Allocated',
    expr: '(nvidia_smi_memory_used_bytes{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Temperature',
    expr: '(nvidia_smi_temperature_gpu{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Power Draw',
    expr: '(nvidia_smi_power_draw_watts{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Fan Speed %',
    expr: '(nvidia_smi_fan_speed_ratio{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Throttling (history)',
    expr: '((sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_sw_power_cap{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_power_cap{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_sw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_sw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_hw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_thermal_slowdown{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0)) + (sum by(uuid, instance, job) (nvidia_smi_clocks_event_reasons_hw_power_brake_slowdown{uuid=~"$gpu", instance="$node", job="$job"} or nvidia_smi_clocks_throttle_reasons_hw_power_brake_slowdown{uuid=~"$gpu", instance="$node", job="$job"}) or (sum by(uuid, instance, job) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}) * 0))) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'P-State (history)',
    expr: '(nvidia_smi_pstate{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Graphics Clock',
    expr: '(nvidia_smi_clocks_current_graphics_clock_hz{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Memory Clock',
    expr: '(nvidia_smi_clocks_current_memory_clock_hz{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'ECC Errors (uncorrected)',
    expr: '(sum by(uuid, instance, job) (nvidia_smi_ecc_errors_uncorrected_aggregate_total{uuid=~"$gpu", instance="$node", job="$job"}) or sum by(uuid, instance, job) ({__name__=~"nvidia_smi_ecc_errors_uncorrected_aggregate_.+", uuid=~"$gpu", instance="$node", job="$job"})) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Recovery Action (history)',
    expr: '(nvidia_smi_gpu_recovery_action{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'Power Draw (energy counter)',
    expr: '(rate(nvidia_smi_energy_joules_total{uuid=~"$gpu", instance="$node", job="$job"}[$__rate_interval])) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'PCIe TX',
    expr: '(nvidia_smi_pcie_throughput_tx_bytes_per_second{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'PCIe RX',
    expr: '(nvidia_smi_pcie_throughput_rx_bytes_per_second{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'XID Errors (since exporter start)',
    expr: '(sum by (uuid) (nvidia_smi_xid_errors_total{uuid=~"$gpu", instance="$node", job="$job"})) * on(uuid) group_left(index, name) (max by (uuid, index, name) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"})) or ((max by (uuid, index, name) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"})) * 0) or (sum by (uuid) (nvidia_smi_xid_errors_total{uuid=~"$gpu", instance="$node", job="$job"}) unless on(uuid) nvidia_smi_gpu_info{instance="$node", job="$job"})',
  },
  {
    dashboard: '25547',
    title: 'Last XID per GPU',
    expr: '(time() - max by (uuid, xid) (nvidia_smi_xid_last_timestamp_seconds{uuid=~"$gpu", instance="$node", job="$job"})) * on(uuid) group_left(index, name) (max by (uuid, index, name) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"})) or ((max by (uuid, index, name) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"})) * 0 - 1) unless on(uuid) nvidia_smi_xid_last_timestamp_seconds{uuid=~"$gpu", instance="$node", job="$job"} or ((time() - max by (uuid, xid) (nvidia_smi_xid_last_timestamp_seconds{uuid=~"$gpu", instance="$node", job="$job"})) unless on(uuid) nvidia_smi_gpu_info{instance="$node", job="$job"})',
  },
  {
    dashboard: '25547',
    title: 'MIG Instances',
    expr: '(max by (uuid, gpu_instance_id, profile) (nvidia_smi_mig_info{instance="$node", job="$job"})) * on(uuid) group_left(index, name) (max by (uuid, index, name) (nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}))',
  },
  {
    dashboard: '25547',
    title: 'MIG SM Activity',
    expr: '((nvidia_smi_mig_sm_activity_ratio{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid, gpu_instance_id) group_left(profile) (max by (uuid, gpu_instance_id, profile) (label_replace(nvidia_smi_mig_info{instance="$node", job="$job"}, "profile", "$1", "profile", "^[0-9]+c\\\\.(.*)$")))) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
  {
    dashboard: '25547',
    title: 'MIG Memory Used',
    expr: '((nvidia_smi_mig_memory_used_bytes{uuid=~"$gpu", instance="$node", job="$job"}) * on(uuid, gpu_instance_id) group_left(profile) (max by (uuid, gpu_instance_id, profile) (label_replace(nvidia_smi_mig_info{instance="$node", job="$job"}, "profile", "$1", "profile", "^[0-9]+c\\\\.(.*)$")))) * on(uuid) group_left(index, name) nvidia_smi_gpu_info{uuid=~"$gpu", instance="$node", job="$job"}',
  },
];

/** The template variables, the same in both dashboards: label_values(metric, label) as Grafana sends it (a series match and a label), and gpu's query_result with the regex that picks its values. */
export const VARIABLES = {
  job: { match: 'nvidia_smi_index', label: 'job' },
  node: { match: 'nvidia_smi_index{job="$job"}', label: 'instance' },
  gpu: {
    query:
      'label_join(label_replace(label_join(nvidia_smi_gpu_info{instance="$node", job="$job"}, "ni", " #", "name", "index"), "us", "($1)", "uuid", "^(........).*"), "gpu_label", " ", "ni", "us")',
    regex: '/gpu_label="(?<text>[^"]+)|uuid="(?<value>[^"]+)/g',
  },
} as const;
