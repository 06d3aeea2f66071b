// A GPU's answers hour by hour, as store/fill.ts gathers them before it makes them into buckets:
// the one part of the store door's state that grows with GPUs x hours while answers are read.

/** Per GPU-hour: the answers of the `gpu` questions, as the store gave them. */
export interface GpuHour {
  samples: number;
  down: number;
  utilN: number;
  utilSum: number;
  memMax?: number;
  memTotal?: number;
  powerN: number;
  powerSum: number;
  tempMax?: number;
  energy?: number;
  idleShare?: number;
  freeShare?: number;
  freeUtil?: number;
  freePower?: number;
  freeIdle?: number;
  /** Samples that said who reserved the GPU (nvidia_gpu_reservations). */
  reservedRead?: number;
}

/**
 * The fields of a GPU's hour, in the order of its row in GpuHourRows. `present` says the hour was
 * answered at all; a field a question sets (not adds to) is NaN until it is answered.
 */
const GPU_FIELDS = [
  'present',
  'samples',
  'down',
  'utilN',
  'utilSum',
  'memMax',
  'memTotal',
  'powerN',
  'powerSum',
  'tempMax',
  'energy',
  'idleShare',
  'freeShare',
  'freeUtil',
  'freePower',
  'freeIdle',
  'reservedRead',
] as const;
type GpuField = Exclude<(typeof GPU_FIELDS)[number], 'present'>;
const FIELD_COUNT = GPU_FIELDS.length;
const COLUMN = Object.fromEntries(GPU_FIELDS.map((field, i) => [field, i])) as Record<(typeof GPU_FIELDS)[number], number>;
/** Fields that sum the answers of their question; 0 when not answered. */
const SUMMED: readonly GpuField[] = ['samples', 'down', 'utilN', 'utilSum', 'powerN', 'powerSum'];
/** Fields that add their answers up: the sums, and the samples that said who reserved the GPU (none until one did). */
const ADDED: ReadonlySet<GpuField> = new Set([...SUMMED, 'reservedRead']);

/** The field of a GPU's hour each `gpu` question's value fills. */
export const GPU_ANSWERS: Readonly<Record<string, GpuField>> = {
  samples: 'samples',
  down: 'down',
  util_n: 'utilN',
  util_sum: 'utilSum',
  mem_max: 'memMax',
  mem_total: 'memTotal',
  power_n: 'powerN',
  power_sum: 'powerSum',
  temp_max: 'tempMax',
  energy: 'energy',
  idle_held: 'idleShare',
  free_share: 'freeShare',
  free_util: 'freeUtil',
  free_power: 'freePower',
  free_idle: 'freeIdle',
  reserved_read: 'reservedRead',
};

/** The report's hours, each given a row number the first time any answer names it; shared by all GPUs. */
export class HourSlots {
  private readonly slotOf = new Map<number, number>();
  readonly hours: number[] = [];

  constructor(hours: readonly number[]) {
    for (const hour of hours) this.slot(hour);
  }

  slot(hour: number): number {
    let slot = this.slotOf.get(hour);
    if (slot === undefined) {
      slot = this.hours.length;
      this.slotOf.set(hour, slot);
      this.hours.push(hour);
    }
    return slot;
  }
}

/**
 * A resizable ArrayBuffer (ES2024; TypeScript's lib here is ES2022's), used at a fixed length: V8
 * maps its pages apart and unmaps them when it is let go, where a plain one of 100 KB comes from
 * malloc, which kept the freed rows of every GPU in the process (peak RSS 179-182 -> 161-166 MiB at
 * 40 hosts' month, Node.js 20, against Prometheus).
 */
const MappedArrayBuffer = ArrayBuffer as unknown as new (length: number, options: { maxByteLength: number }) => ArrayBuffer;

/**
 * One GPU's hours as rows of one Float64Array (a row per hour slot, a column per field). Kept as
 * an object per hour in a Map, 40 hosts x 8 GPUs x 30 days was 230,000 objects whose fields, added
 * after the literal, went to a property array each, their numbers boxed: 60 MB of the 69 MB alive
 * before the buckets were made (a heap snapshot), where these rows are 31 MB.
 */
export class GpuHourRows {
  private rows = new Float64Array(0);

  constructor(private readonly slots: HourSlots) {}

  /** The row of `hour`, made present (summed fields 0, the others NaN) the first time. */
  private row(hour: number): number {
    const slot = this.slots.slot(hour);
    if ((slot + 1) * FIELD_COUNT > this.rows.length) {
      // To every hour known so far at once: the report names them all before the first answer.
      const bytes = Math.max(slot + 1, this.slots.hours.length) * FIELD_COUNT * Float64Array.BYTES_PER_ELEMENT;
      const grown = new Float64Array(new MappedArrayBuffer(bytes, { maxByteLength: bytes }));
      grown.set(this.rows);
      this.rows = grown;
    }
    const at = slot * FIELD_COUNT;
    if (this.rows[at] === 0) {
      this.rows.fill(Number.NaN, at + 1, at + FIELD_COUNT);
      this.rows[at] = 1;
      for (const field of SUMMED) this.rows[at + COLUMN[field]] = 0;
    }
    return at;
  }

  /** `value` added to the hour's `field` (ADDED), or set as it; a field not yet answered is NaN: it is set. */
  take(hour: number, field: GpuField, value: number): void {
    const at = this.row(hour) + COLUMN[field];
    const old = this.rows[at]!;
    this.rows[at] = ADDED.has(field) && !Number.isNaN(old) ? old + value : value;
  }

  /** The hours answered, as objects (made as they are read: they live no longer than the caller's loop). */
  *entries(): Generator<[number, GpuHour]> {
    for (let slot = 0; (slot + 1) * FIELD_COUNT <= this.rows.length; slot++) {
      const at = slot * FIELD_COUNT;
      if (this.rows[at] === 0) continue;
      const value = (field: GpuField) => this.rows[at + COLUMN[field]]!;
      const optional = (field: GpuField) => (Number.isNaN(value(field)) ? undefined : value(field));
      yield [
        this.slots.hours[slot]!,
        {
          samples: value('samples'),
          down: value('down'),
          utilN: value('utilN'),
          utilSum: value('utilSum'),
          memMax: optional('memMax'),
          memTotal: optional('memTotal'),
          powerN: value('powerN'),
          powerSum: value('powerSum'),
          tempMax: optional('tempMax'),
          energy: optional('energy'),
          idleShare: optional('idleShare'),
          freeShare: optional('freeShare'),
          freeUtil: optional('freeUtil'),
          freePower: optional('freePower'),
          freeIdle: optional('freeIdle'),
          reservedRead: optional('reservedRead'),
        },
      ];
    }
  }

  /** Lets the rows go (the GPU's buckets are made). */
  clear(): void {
    this.rows = new Float64Array(0);
  }
}
