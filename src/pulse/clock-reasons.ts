import { CLOCK_EVENT_REASON_BITS } from '../fields/field-spec.js';

/** nvmlClocksEventReasons bits, as the field table has them. */
export const REASON_BITS = CLOCK_EVENT_REASON_BITS;
/** Reasons that hold a busy GPU back against its will (power capping at the limit is the GPU doing all it may). */
export const THROTTLING = ['hw_slowdown', 'sw_thermal_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown'];
