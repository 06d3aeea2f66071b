/** Durations on the command line: plain seconds ("3", "0.5") or with a unit ("500ms", "10s", "2m", "1h", "7d"). */
export function parseDuration(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isFinite(text) && text >= 0 ? text * 1000 : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(text);
  if (!match) return undefined;
  const scale = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * scale;
}

const DAY_MS = 86_400_000;

/** An age in days: a plain number is days ("7", archive's --max-age as it always was), or a span as above ("7d", "36h"). */
export function parseDays(text: string): number | undefined {
  if (/^\s*\d+(?:\.\d+)?\s*$/.test(text)) return Number(text);
  const ms = parseDuration(text);
  return ms === undefined ? undefined : ms / DAY_MS;
}
