/** nvmlClocksEventReasons bits. */
export const REASON_BITS: Record<string, bigint> = {
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
/** Reasons that hold a busy GPU back against its will (power capping at the limit is the GPU doing all it may). */
export const THROTTLING = ['hw_slowdown', 'sw_thermal_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown'];
