import { describe, expect, it } from 'vitest';
import { FIELDS } from '../../../src/fields/fields.js';
import type { FieldSpec } from '../../../src/fields/field-spec.js';
import { readCell, sampleFromCells } from '../../../src/sources/nvidia-smi/rows.js';

const field = (query: string): FieldSpec => FIELDS.find((f) => f.query === query)!;

describe('readCell', () => {
  it('MiB -> bytes', () => expect(readCell(field('memory.used'), '518')).toEqual({ kind: 'number', value: 518 * 1048576, shown: '518' }));
  it('% -> ratio', () => expect(readCell(field('utilization.gpu'), '87')).toEqual({ kind: 'number', value: 0.87, shown: '87' }));
  it('MHz -> hertz', () => expect(readCell(field('clocks.current.sm'), '1980')).toMatchObject({ value: 1.98e9 }));
  it('us -> seconds', () => expect(readCell(field('clocks_event_reasons_counters.sw_power_cap'), '2500000')).toMatchObject({ value: 2.5 }));
  it('us -> seconds without binary noise', () =>
    expect(readCell(field('clocks_event_reasons_counters.sw_power_cap'), '204642816')).toMatchObject({ value: 204.642816 }));
  it('% -> ratio without binary noise', () => expect(readCell(field('utilization.gpu'), '7')).toMatchObject({ value: 0.07 }));
  it('Active -> 1', () => expect(readCell(field('clocks_event_reasons.gpu_idle'), 'Active')).toMatchObject({ value: 1 }));
  it('Not Active -> 0', () => expect(readCell(field('clocks_event_reasons.gpu_idle'), 'Not Active')).toMatchObject({ value: 0 }));
  it('Enabled -> 1', () => expect(readCell(field('persistence_mode'), 'Enabled')).toMatchObject({ value: 1 }));
  it('P8 -> 8', () => expect(readCell(field('pstate'), 'P8')).toMatchObject({ value: 8 }));
  it('P12 -> 12, shown as printed', () => expect(readCell(field('pstate'), 'P12')).toEqual({ kind: 'number', value: 12, shown: 'P12' }));
  it.each(['xP8', 'P8x', 'P', 'P123'])('%s is no pstate', (text) =>
    expect(readCell(field('pstate'), text)).toEqual({ kind: 'error', error: 'unparsable' }),
  );
  it('a word in a yes/no field is unparsable', () =>
    expect(readCell(field('persistence_mode'), 'Maybe')).toEqual({ kind: 'error', error: 'unparsable' }));
  it('a state is text', () => expect(readCell(field('compute_mode'), 'Default')).toEqual({ kind: 'text', text: 'Default' }));
  it('a number without a unit factor is as printed', () =>
    expect(readCell(field('temperature.gpu'), '45')).toEqual({ kind: 'number', value: 45, shown: '45' }));
  it('a word in a number field is an error, never a number', () =>
    expect(readCell(field('power.draw'), 'lots')).toEqual({ kind: 'error', error: 'unparsable' }));
  it('a word in a flag field is an error', () =>
    expect(readCell(field('persistence_mode'), 'Maybe')).toEqual({ kind: 'error', error: 'unparsable' }));
  it('[N/A] is absent', () => expect(readCell(field('fan.speed'), '[N/A]')).toEqual({ kind: 'absent' }));
  it('[Unknown Error] is an error', () =>
    expect(readCell(field('power.draw'), '[Unknown Error]')).toEqual({ kind: 'error', error: 'unknown_error' }));
});

describe('sampleFromCells', () => {
  const fields = [field('index'), field('uuid'), field('power.draw')];
  it('a row with the wrong number of cells is a problem, not a shifted sample', () => {
    const result = sampleFromCells(fields, ['0', 'GPU-1', '70', '1'], '0, GPU-1, 70, 1');
    expect(result).toMatchObject({ gpu: '0', uuid: 'GPU-1', message: 'row has 4 cells, the query asked for 3' });
  });
  it('a row that does not start with index and uuid is a problem', () => {
    expect(sampleFromCells(fields, ['x', 'y', '1'], 'x, y, 1')).toMatchObject({ message: expect.stringMatching(/index and UUID/) });
  });
  it.each([
    ['an index alone', ['0', 'y', '1'], '0', undefined],
    ['a UUID alone', ['x', 'GPU-1', '1'], undefined, 'GPU-1'],
    ['an index with junk', ['0x', 'GPU-1', '1'], undefined, 'GPU-1'],
    ['junk before an index', ['x10', 'GPU-1', '1'], undefined, 'GPU-1'],
    ['a UUID with junk before it', ['10', 'xGPU-1', '1'], '10', undefined],
    ['a UUID with junk after it', ['10', 'GPU-1!', '1'], '10', undefined],
  ])('%s: a problem that names what it could read', (_, cells, gpu, uuid) =>
    expect(sampleFromCells(fields, cells, cells.join(', '))).toEqual({
      line: cells.join(', '),
      gpu,
      uuid,
      message: 'row does not start with a GPU index and UUID',
    }),
  );
  it('cells are trimmed; each reading is kept by its query', () => {
    const result = sampleFromCells(fields, [' 12 ', ' MIG-a-b ', ' 70.5 '], '');
    expect(result).toEqual({
      gpu: '12',
      uuid: 'MIG-a-b',
      readings: new Map([
        ['index', { kind: 'text', text: '12' }],
        ['uuid', { kind: 'text', text: 'MIG-a-b' }],
        ['power.draw', { kind: 'number', value: 70.5, shown: '70.5' }],
      ]),
    });
  });
});
