// Axis ticks the way a dashboard draws them: round values (1, 2, 2.5, 5 x 10^n) with units, and time
// ticks on local hour and day boundaries of the machine that writes the report.

const HOUR = 3_600_000;

/** Round ticks from 0 to at least `max`, about `count` of them. */
export function valueTicks(max: number, count = 4): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const top = Math.ceil(max / step - 1e-9) * step;
  return Array.from({ length: Math.round(top / step) + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** A value as a tick or tooltip shows it: about three significant digits, no trailing zeros, and the unit. */
export function formatValue(value: number, unit: string): string {
  const digits = Math.abs(value) >= 100 || Number.isInteger(value) ? 0 : Math.abs(value) >= 10 ? 1 : 2;
  return `${Number(value.toFixed(digits))} ${unit}`;
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number) => String(n).padStart(2, '0');

/** "Mon 23 Nov" (local). */
export const dayLabel = (time: number) => {
  const d = new Date(time);
  return `${DAYS[d.getDay()]} ${d.getDate()} ${MONTHS[d.getMonth()]}`;
};

/** "14:00" (local). */
export const hourLabel = (time: number) => {
  const d = new Date(time);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
};

/** A tick on the time axis: a local midnight is major (day label, stronger gridline). */
export interface TimeTick {
  time: number;
  label: string;
  major: boolean;
}

const STEPS_HOURS = [1, 2, 3, 6, 12, 24, 48, 168];

/** Ticks on local hour boundaries between `x0` and `x1`, spaced so that at most `maxTicks` fit. */
export function timeTicks(x0: number, x1: number, maxTicks: number): TimeTick[] {
  const span = Math.max(HOUR, x1 - x0) / HOUR;
  const stepHours = STEPS_HOURS.find((s) => span / s <= maxTicks) ?? Math.ceil(span / maxTicks / 168) * 168;
  const ticks: TimeTick[] = [];
  const first = new Date(x0);
  first.setMinutes(0, 0, 0);
  for (let d = first; d.getTime() <= x1; d = new Date(d.getTime() + HOUR)) {
    const time = d.getTime();
    if (time < x0) continue;
    const midnight = d.getHours() === 0;
    const onStep =
      stepHours < 24 ? d.getHours() % stepHours === 0 : midnight && Math.round((time - x0) / 86_400_000) % (stepHours / 24) === 0;
    if (onStep) ticks.push({ time, label: midnight ? dayLabel(time) : hourLabel(time), major: midnight });
    if (ticks.length > 4 * maxTicks) break;
  }
  return ticks;
}

/** The zone's UTC offset (minutes) from `x0` on, and at each change up to `x1`: the page's hover labels use it. */
export function zoneOffsets(x0: number, x1: number): [time: number, offsetMinutes: number][] {
  const offsets: [number, number][] = [[x0, -new Date(x0).getTimezoneOffset()]];
  for (let t = x0 + HOUR; t <= x1 + HOUR; t += HOUR) {
    const offset = -new Date(t).getTimezoneOffset();
    if (offset !== offsets[offsets.length - 1]![1]) offsets.push([t, offset]);
  }
  return offsets;
}
