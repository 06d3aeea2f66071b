import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CAPTURES, ROOT } from '../support/helpers.js';

// The goldens are written by our own code, so comparing them with themselves proves nothing about
// their values. This test recomputes each value from the recorded nvidia-smi CSV with code that shares
// nothing with src/: its own column -> metric table (written from nvidia-smi's field names and our
// documented metric names), its own unit conversions, its own parsing of both files.

/** nvidia-smi column (as the header names it, unit stripped) -> metric family and extra labels. */
const COLUMN_METRICS: Record<string, { metric: string; labels?: Record<string, string> }> = {
  'memory.used': { metric: 'nvidia_gpu_memory_used_bytes' },
  'memory.total': { metric: 'nvidia_gpu_memory_total_bytes' },
  'memory.free': { metric: 'nvidia_gpu_memory_free_bytes' },
  'memory.reserved': { metric: 'nvidia_gpu_memory_reserved_bytes' },
  'utilization.gpu': { metric: 'nvidia_gpu_utilization_ratio' },
  'utilization.memory': { metric: 'nvidia_gpu_memory_utilization_ratio' },
  'utilization.encoder': { metric: 'nvidia_gpu_encoder_utilization_ratio' },
  'utilization.decoder': { metric: 'nvidia_gpu_decoder_utilization_ratio' },
  'fan.speed': { metric: 'nvidia_gpu_fan_speed_ratio' },
  'power.draw': { metric: 'nvidia_gpu_power_draw_watts' },
  'power.draw.instant': { metric: 'nvidia_gpu_power_draw_instant_watts' },
  'power.limit': { metric: 'nvidia_gpu_power_limit_watts' },
  'enforced.power.limit': { metric: 'nvidia_gpu_power_enforced_limit_watts' },
  'power.default_limit': { metric: 'nvidia_gpu_power_default_limit_watts' },
  'power.min_limit': { metric: 'nvidia_gpu_power_min_limit_watts' },
  'power.max_limit': { metric: 'nvidia_gpu_power_max_limit_watts' },
  'temperature.gpu': { metric: 'nvidia_gpu_temperature_celsius' },
  'temperature.memory': { metric: 'nvidia_gpu_memory_temperature_celsius' },
  'clocks.current.sm': { metric: 'nvidia_gpu_sm_clock_hertz' },
  'clocks.current.memory': { metric: 'nvidia_gpu_memory_clock_hertz' },
  'clocks.current.graphics': { metric: 'nvidia_gpu_graphics_clock_hertz' },
  'clocks.current.video': { metric: 'nvidia_gpu_video_clock_hertz' },
  'clocks.max.sm': { metric: 'nvidia_gpu_sm_clock_max_hertz' },
  'clocks.max.memory': { metric: 'nvidia_gpu_memory_clock_max_hertz' },
  'clocks.max.graphics': { metric: 'nvidia_gpu_graphics_clock_max_hertz' },
  ...Object.fromEntries(
    ['sw_power_cap', 'hw_thermal_slowdown', 'hw_power_brake_slowdown', 'sw_thermal_slowdown', 'sync_boost'].map((reason) => [
      `clocks_event_reasons_counters.${reason}`,
      { metric: 'nvidia_gpu_clocks_event_reason_seconds_total', labels: { reason } },
    ]),
  ),
};

/** A recorded cell "1980 MHz" in its unit -> the value in base units; undefined when it is no number. */
function toBaseUnits(cell: string, unit: string | undefined): number | undefined {
  const match = /^(-?\d+(?:\.\d+)?)(?: (MiB|%|MHz|W|us|C))?$/.exec(cell.trim());
  if (!match) return undefined;
  const number = Number(match[1]);
  switch (unit) {
    case 'MiB':
      return number * 1024 * 1024;
    case '%':
      return number / 100;
    case 'MHz':
      return number * 1_000_000;
    case 'us':
      return number / 1_000_000;
    default:
      return number; // W, degrees C, and columns without a unit in the header
  }
}

/** `name{a="b",...} value` lines of an exposition text (our goldens have no escapes in these labels). */
function goldenSamples(text: string): { name: string; labels: Record<string, string>; value: string }[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1]!, labels, value: match[3]! };
    });
}

const capturesWithGoldens = readdirSync(CAPTURES).filter(
  (dir) => existsSync(join(CAPTURES, dir, 'query-gpu.csv')) && existsSync(join(ROOT, 'test/golden', `${dir}.prom`)),
);

describe('golden values, recomputed from the recorded CSV', () => {
  it('covers the recorded captures', () => expect(capturesWithGoldens.length).toBeGreaterThan(15));

  it.each(capturesWithGoldens)('%s', (dir) => {
    const [header, ...rows] = readFileSync(join(CAPTURES, dir, 'query-gpu.csv'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    const columns = header!.split(', ').map((column) => {
      const match = /^(.+?)(?: \[(.+)\])?$/.exec(column.trim())!;
      return { name: match[1]!, unit: match[2] };
    });
    const index = columns.findIndex((column) => column.name === 'index');
    const golden = goldenSamples(readFileSync(join(ROOT, 'test/golden', `${dir}.prom`), 'utf8'));
    let checked = 0;
    for (const row of rows) {
      const cells = row.split(', ');
      // A row whose cells do not line up (a comma in a name) is not ours to check here.
      if (cells.length !== columns.length) continue;
      const gpu = cells[index]!.trim();
      columns.forEach((column, i) => {
        const target = COLUMN_METRICS[column.name];
        if (!target) return;
        const expected = toBaseUnits(cells[i]!, column.unit);
        const found = golden.filter(
          (s) =>
            s.name === target.metric && s.labels.gpu === gpu && Object.entries(target.labels ?? {}).every(([k, v]) => s.labels[k] === v),
        );
        const where = `${dir} gpu ${gpu} ${column.name} "${cells[i]}"`;
        // Every column of the table is one a default run asks for: a value the CSV holds and the golden
        // lacks is a value lost (checked: removing one golden line fails here).
        if (expected === undefined) {
          expect([where, found]).toEqual([where, []]);
          return;
        }
        expect([where, found.length]).toEqual([where, 1]);
        const value = Number(found[0]!.value);
        expect([where, Math.abs(value - expected) <= Math.abs(expected) * 1e-12]).toEqual([where, true]);
        // As Prometheus clients print it: the shortest text for the value, no binary noise.
        expect([where, found[0]!.value.replace(/^-/, '').replace('.', '').replace(/^0+/, '').length <= 15]).toEqual([where, true]);
        checked++;
      });
    }
    expect(checked).toBeGreaterThan(5);
  });
});
