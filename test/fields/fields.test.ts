import { describe, expect, it } from 'vitest';
import { METRIC_NAME, LABEL_NAME } from '../../src/exposition/escape.js';
import { FIELDS } from '../../src/fields/fields.js';
import { fieldNames } from '../../src/fields/field-spec.js';
import { globMatches, selectFields } from '../../src/fields/field-select.js';
import { fieldFamilies, metricCatalog } from '../../src/metrics/metrics-catalog.js';

const BASE_UNITS = [
  '_bytes',
  // NVML's PCIe throughput is a rate over its own 20 ms window, not a counter one could rate().
  '_bytes_per_second',
  '_joules_total',
  '_watts',
  '_celsius',
  '_hertz',
  '_seconds_total',
  '_ratio',
  '_seconds',
  '_lanes',
  '_generation',
];

describe('the field table', () => {
  it('names every field once, by any of its names', () => {
    const names = FIELDS.flatMap(fieldNames);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });

  it('gives every metric a valid name with the nvidia_gpu_ prefix', () => {
    for (const { name } of metricCatalog()) {
      expect(name).toMatch(METRIC_NAME);
      expect(name).toMatch(/^nvidia_gpu_/);
    }
  });

  it('counters, and only counters, end in _total', () => {
    for (const { name, type } of metricCatalog()) expect([name, type === 'counter']).toEqual([name, name.endsWith('_total')]);
  });

  it('a field with a unit factor names its base unit', () => {
    for (const field of FIELDS.filter((f) => f.factor !== undefined || f.unit === 'W' || f.unit === 'C')) {
      expect([field.metric, BASE_UNITS.some((suffix) => field.metric!.endsWith(suffix))]).toEqual([field.metric, true]);
    }
  });

  it('percentages become ratios (factor 0.01) named _ratio', () => {
    for (const field of FIELDS.filter((f) => f.unit === '%'))
      expect([field.metric, field.factor]).toEqual([expect.stringMatching(/_ratio$/), 0.01]);
  });

  it('fields that share a family share its type and HELP, and differ by a label', () => {
    for (const { spec, fields } of fieldFamilies(FIELDS)) {
      for (const field of fields) expect([field.query, field.type, field.help]).toEqual([field.query, spec.type, spec.help]);
      const labelSets = fields.map((f) => JSON.stringify(f.labels ?? {}));
      expect(new Set(labelSets).size).toBe(fields.length);
    }
  });

  it('HELP is one sentence of our own, ending in a full stop', () => {
    for (const { name, help } of metricCatalog()) expect([name, help]).toEqual([name, expect.stringMatching(/^[A-Z][^\n]*\.$/)]);
  });

  it('labels have valid names', () => {
    for (const { labels } of metricCatalog()) for (const label of labels) expect(label).toMatch(LABEL_NAME);
  });

  it('identity fields become labels, never values', () => {
    for (const query of ['uuid', 'name', 'pci.bus_id', 'serial', 'vbios_version', 'driver_version', 'compute_cap']) {
      expect(FIELDS.find((f) => f.query === query)?.kind).toBe('label');
    }
  });

  it('covers what the collector issue asks for', () => {
    const queries = new Set(FIELDS.map((f) => f.query));
    for (const query of [
      'index',
      'uuid',
      'name',
      'pci.bus_id',
      'serial',
      'vbios_version',
      'driver_version',
      'compute_cap',
      'utilization.gpu',
      'utilization.memory',
      'utilization.encoder',
      'utilization.decoder',
      'memory.total',
      'memory.used',
      'memory.free',
      'memory.reserved',
      'power.draw',
      'power.draw.instant',
      'power.limit',
      'enforced.power.limit',
      'power.default_limit',
      'power.min_limit',
      'power.max_limit',
      'temperature.gpu',
      'temperature.memory',
      'temperature.gpu.tlimit',
      'clocks.current.sm',
      'clocks.current.memory',
      'clocks.current.graphics',
      'clocks.current.video',
      'clocks.max.sm',
      'clocks.max.memory',
      'clocks.max.graphics',
      'fan.speed',
      'pstate',
      'persistence_mode',
      'compute_mode',
      'ecc.errors.corrected.volatile.total',
      'ecc.errors.uncorrected.volatile.total',
      'ecc.errors.corrected.aggregate.total',
      'ecc.errors.uncorrected.aggregate.total',
      'remapped_rows.correctable',
      'remapped_rows.uncorrectable',
      'remapped_rows.pending',
      'remapped_rows.failure',
      'retired_pages.single_bit_ecc.count',
      'retired_pages.double_bit.count',
      'retired_pages.pending',
      'pcie.link.gen.current',
      'pcie.link.width.current',
      'mig.mode.current',
      'gpu_recovery_action',
    ])
      expect([query, queries.has(query)]).toEqual([query, true]);
    const reasons = FIELDS.filter((f) => f.metric === 'nvidia_gpu_clocks_event_reason_active').map((f) => f.labels!.reason);
    expect(reasons).toEqual([
      'gpu_idle',
      'applications_clocks_setting',
      'sw_power_cap',
      'hw_slowdown',
      'hw_thermal_slowdown',
      'hw_power_brake_slowdown',
      'sw_thermal_slowdown',
      'sync_boost',
    ]);
  });
});

describe('--exclude-fields globs', () => {
  it.each([
    ['ecc.*', 'ecc.errors.corrected.volatile.total', true],
    ['ecc.*', 'ecc_mode', false],
    ['clocks_event_reasons.?w_*', 'clocks_event_reasons.sw_power_cap', true],
    ['power.draw', 'power.draw.instant', false],
  ])('%s matches %s: %s', (glob, name, expected) => expect(globMatches(glob, name)).toBe(expected));
  it('slow fields only when asked for', () => {
    expect(selectFields(FIELDS, []).some((f) => f.slow)).toBe(false);
    expect(
      selectFields(FIELDS, [], true)
        .filter((f) => f.slow)
        .map((f) => f.query),
    ).toEqual(FIELDS.filter((f) => f.slow).map((f) => f.query));
    // The clock event time counters (nvidia-smi) and PCIe throughput (NVML): the fields whose cost was measured.
    expect(FIELDS.filter((f) => f.slow).every((f) => /^(clocks_event_reasons_counters|nvml\.pcie\.throughput)\./.test(f.query))).toBe(true);
  });
  it('match by metric name too', () => {
    expect(selectFields(FIELDS, ['nvidia_gpu_fan_*']).some((f) => f.query === 'fan.speed')).toBe(false);
  });
  it('index and uuid stay whatever is excluded: every series is named by them', () => {
    expect(selectFields(FIELDS, ['*']).map((f) => f.query)).toEqual(['index', 'uuid']);
    expect(selectFields(FIELDS, ['index', 'uuid']).map((f) => f.query)).toEqual(FIELDS.filter((f) => !f.slow).map((f) => f.query));
  });
});
