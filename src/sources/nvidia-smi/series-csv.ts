import { classifyCell, splitCells } from './cells.js';

/** One sample of one GPU from a `--query-gpu=… --format=csv -lms N` recording. */
export interface SeriesSample {
  /** Milliseconds since the epoch, read as local time (nvidia-smi prints no zone). */
  time: number;
  gpu: string;
  utilization: number;
  powerW?: number;
  powerLimitW?: number;
  smClockMHz?: number;
  smClockMaxMHz?: number;
  /** clocks_event_reasons.active as a bitmask. */
  reasons?: bigint;
  /** GPM's SM and tensor activity (%), in a recording of the NVML source's fields. */
  smActive?: number;
  tensorActive?: number;
}

// Any of these names (nvidia-smi prints the name it was asked by) feeds the same value.
const COLUMNS: Record<keyof Omit<SeriesSample, 'time' | 'gpu' | 'utilization'>, string[]> = {
  powerW: ['power.draw', 'power.draw.average', 'power.draw.instant'],
  powerLimitW: ['power.max_limit', 'enforced.power.limit', 'power.limit'],
  smClockMHz: ['clocks.current.sm', 'clocks.sm'],
  smClockMaxMHz: ['clocks.max.sm'],
  reasons: ['clocks_event_reasons.active', 'clocks_throttle_reasons.active'],
  smActive: ['nvml.gpm.sm_active'],
  tensorActive: ['nvml.gpm.tensor_active'],
};

/** "2026/11/29 18:23:15.400" -> epoch ms (local time). */
const parseTimestamp = (text: string): number => {
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?$/.exec(text.trim());
  if (!m) return Number.NaN;
  return new Date(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +(m[7] ?? '0').padEnd(3, '0')).getTime();
};

const number = (text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const cell = classifyCell(text.replace(/ (%|W|MHz|MiB)$/, ''));
  return cell.kind === 'value' && /^-?\d+(\.\d+)?$/.test(cell.text) ? Number(cell.text) : undefined;
};

export type SeriesParse = { samples: SeriesSample[]; skipped: number } | { error: string };

/**
 * A recording with its header (`--format=csv`, with or without units): any column set that has
 * timestamp, index and utilization.gpu; power, clocks and clock event reasons are used when present.
 */
export function parseSeries(text: string): SeriesParse {
  const lines = text
    .split('\n')
    .map((l) => l.replace(/\r$/, ''))
    .filter((l) => l.trim() !== '');
  const header = (lines[0] ?? '').split(', ').map((h) => h.replace(/ \[.*\]$/, '').trim());
  const at = (names: string[]) => names.map((n) => header.indexOf(n)).find((i) => i >= 0);
  const time = at(['timestamp']);
  const index = at(['index']);
  const utilization = at(['utilization.gpu']);
  if (time === undefined || index === undefined || utilization === undefined) {
    return {
      error: `the recording needs timestamp, index and utilization.gpu columns; its header is: ${lines[0]?.slice(0, 200) ?? '(empty)'}`,
    };
  }
  const optional = Object.fromEntries(Object.entries(COLUMNS).map(([key, names]) => [key, at(names)])) as Record<
    keyof typeof COLUMNS,
    number | undefined
  >;
  const samples: SeriesSample[] = [];
  let skipped = 0;
  for (const line of lines.slice(1)) {
    const cells = splitCells(line);
    // A repeated header (recordings concatenated) or a row that does not fit is skipped, not guessed at.
    const util = number(cells[utilization]);
    const t = parseTimestamp(cells[time] ?? '');
    if (cells.length !== header.length || util === undefined || Number.isNaN(t)) {
      skipped++;
      continue;
    }
    const sample: SeriesSample = { time: t, gpu: cells[index]!.trim(), utilization: util };
    for (const key of ['powerW', 'powerLimitW', 'smClockMHz', 'smClockMaxMHz', 'smActive', 'tensorActive'] as const) {
      const i = optional[key];
      const value = i === undefined ? undefined : number(cells[i]);
      if (value !== undefined) sample[key] = value;
    }
    const reasons = optional.reasons === undefined ? undefined : cells[optional.reasons]?.trim();
    if (reasons && /^0x[0-9a-fA-F]+$/.test(reasons)) sample.reasons = BigInt(reasons);
    samples.push(sample);
  }
  return { samples, skipped };
}
