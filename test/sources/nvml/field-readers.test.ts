import { describe, expect, it } from 'vitest';
import { checkExposition, type ParsedSample } from '../../../src/exposition/check.js';
import { capture } from '../../support/helpers.js';
import { collectWithStandIn, standInConfig } from '../../support/nvml-stand-in.js';

// An NVML getter that returns SUCCESS with a value that is none: 0xFFFFFFFF (a 32-bit "not
// available"), 2^64 - 1 (NVML_VALUE_NOT_AVAILABLE), or a number past what the quantity can be. Each is
// the field's error (error="unrecognized"), its series left out, never a number and never clamped.

const CAPTURE = capture('h200x2__580.159.04__linux-load');
const U32 = '4294967295';
const U64 = '18446744073709551615';

async function collect(more: string[], ...args: string[]): Promise<ParsedSample[]> {
  const result = await collectWithStandIn(standInConfig(CAPTURE, more), ...args);
  expect([result.exitCode, result.stderr]).toEqual([0, '']);
  const exposition = checkExposition(result.stdout);
  expect(exposition.problems).toEqual([]);
  return exposition.samples;
}

const cases: [field: string, key: string, series: string][] = [
  ['temperature.gpu', `0.temp=${U32}`, 'nvidia_gpu_temperature_celsius'],
  ['temperature.gpu', '0.temp=201', 'nvidia_gpu_temperature_celsius'],
  ['temperature.memory', `0.field.82=${U32}`, 'nvidia_gpu_memory_temperature_celsius'],
  ['temperature.gpu.tlimit', '0.tlimit=100000', 'nvidia_gpu_temperature_limit_margin_celsius'],
  ['utilization.gpu', `0.util_gpu=${U32}`, 'nvidia_gpu_utilization_ratio'],
  ['utilization.gpu', '0.util_gpu=101', 'nvidia_gpu_utilization_ratio'],
  ['utilization.memory', `0.util_mem=${U32}`, 'nvidia_gpu_memory_utilization_ratio'],
  ['power.draw', `0.power_mw=${U32}`, 'nvidia_gpu_power_draw_watts'],
  ['clocks.current.sm', `0.clock.1=${U32}`, 'nvidia_gpu_sm_clock_hertz'],
  ['clocks.max.sm', `0.max_clock.1=${U32}`, 'nvidia_gpu_sm_clock_max_hertz'],
  ['memory.used', `0.mem_used=${U64}`, 'nvidia_gpu_memory_used_bytes'],
  ['ecc.errors.corrected.volatile.total', `0.ecc.0.0=${U64}`, 'nvidia_gpu_ecc_volatile_errors_total{error_type="corrected"}'],
  ['persistence_mode', `0.persistence=${U32}`, 'nvidia_gpu_persistence_mode'],
  ['compute_mode', `0.compute_mode=${U32}`, 'nvidia_gpu_compute_mode'],
  ['pcie.link.gen.current', `0.pcie_gen=${U32}`, 'nvidia_gpu_pcie_link_generation'],
  ['pcie.link.width.current', '0.pcie_width=65', 'nvidia_gpu_pcie_link_width_lanes'],
];

describe('an NVML answer that is no value', () => {
  it.each(cases)('%s from %s: the field error, no series, the other GPU unharmed', async (field, key, metric) => {
    const samples = await collect([key]);
    // A metric may name one series of its family: name{label="value"}.
    const [name, label, value] = metric.split(/[{="}]+/);
    const of = (gpu: string) =>
      samples.filter((s) => s.name === name && s.labels.gpu === gpu && (label === undefined || s.labels[label] === value));
    const errors = samples.filter((s) => s.name === 'nvidia_gpu_field_error' && s.labels.field === field);
    expect({ gpu0: of('0'), errors: errors.map((s) => [s.labels.gpu, s.labels.error, s.value]) }).toEqual({
      gpu0: [],
      errors: [['0', 'unrecognized', 1]],
    });
    expect(of('1').length).toBeGreaterThan(0);
  });

  it('the energy counter and PCIe replays at their "none", GPM ratios that are no number', async () => {
    const gpm = ['0.gpm=1', '0.gpm.1=inf', '0.gpm.2=nan', '0.gpm.3=-1', '0.gpm.5=94', '0.gpm.10=16'];
    const samples = await collect([`0.energy_mj=${U64}`, `0.replay=${U32}`, ...gpm], '--gpm-window', '20ms');
    const values = (name: string) => samples.filter((s) => s.name === name).map((s) => s.value);
    const errors = samples.filter((s) => s.name === 'nvidia_gpu_field_error').map((s) => `${s.labels.gpu} ${s.labels.field}`);
    expect({
      energy: values('nvidia_gpu_energy_joules_total'),
      replays: values('nvidia_gpu_pcie_replay_errors_total'),
      graphics: values('nvidia_gpu_graphics_active_ratio'),
      smActive: values('nvidia_gpu_sm_active_ratio'),
      occupancy: values('nvidia_gpu_sm_occupancy_ratio'),
      tensor: values('nvidia_gpu_tensor_active_ratio'),
      errors: errors.sort(),
    }).toEqual({
      energy: [],
      replays: [],
      graphics: [],
      smActive: [],
      occupancy: [],
      tensor: [0.94],
      errors: [
        '0 nvml.energy',
        '0 nvml.gpm.graphics_active',
        '0 nvml.gpm.sm_active',
        '0 nvml.gpm.sm_occupancy',
        '0 nvml.pcie.replay_counter',
      ],
    });
  });

  it("a process's utilization sample of 0xFFFFFFFF % is no ratio", async () => {
    const pid = 4242;
    const more = [`0.procs=${pid}:1048576`, `name.${pid}=python3`, `0.putil=${pid}:${U32}:20:1`];
    const samples = await collect(more);
    const ofPid = (name: string) => samples.filter((s) => s.name === name && s.labels.pid === String(pid)).map((s) => s.value);
    expect([ofPid('nvidia_gpu_process_sm_utilization_ratio'), ofPid('nvidia_gpu_process_memory_utilization_ratio')]).toEqual([[], [0.2]]);
  });
});
