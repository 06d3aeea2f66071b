import { FINDING_THRESHOLDS } from '../findings.js';

// The report's questions to a store, as PromQL: each names the series it reads and why. Every one
// is an aggregate over a window (`[R]`, one local hour or the part of it the report covers), so a
// year of 8 GPUs is 8,760 points per series at a step of an hour, under Prometheus's 11,000. Where
// one sample must be judged against another series' sample of the same time (idle while holding
// memory, a job's share of power), a subquery re-samples both at the collection interval (`[R:S]`),
// or the recording rules of examples/prometheus/gpu-textfile-report.rules.yml answer it cheaper.
// Over a fleet's months every question reads each sample of its series once; the five-minute rules
// (gpu-textfile-report-5m.rules.yml) keep an hour's answer in 12 samples per series instead.

/** The family names the report reads (src/metrics/metrics-catalog.ts). */
export const METRIC = {
  success: 'nvidia_gpu_collector_success',
  error: 'nvidia_gpu_collector_error',
  up: 'nvidia_gpu_up',
  utilization: 'nvidia_gpu_utilization_ratio',
  memoryUsed: 'nvidia_gpu_memory_used_bytes',
  memoryTotal: 'nvidia_gpu_memory_total_bytes',
  power: 'nvidia_gpu_power_draw_watts',
  temperature: 'nvidia_gpu_temperature_celsius',
  energy: 'nvidia_gpu_energy_joules_total',
  holder: 'nvidia_gpu_holder_info',
  holders: 'nvidia_gpu_holders',
  reservation: 'nvidia_gpu_reservation_info',
  reservations: 'nvidia_gpu_reservations',
} as const;

/** The recording rules' names (examples/prometheus/gpu-textfile-report.rules.yml): a value per collection. */
export const RECORDED = {
  idleHeld: 'gpu_textfile:idle_held:bool',
  jobIdle: 'gpu_textfile:holder_idle:bool',
  free: 'gpu_textfile:free:bool',
  jobUtil: 'gpu_textfile:holder_utilization:ratio',
  jobPower: 'gpu_textfile:holder_power:watts',
  freeUtil: 'gpu_textfile:free_utilization:ratio',
  freePower: 'gpu_textfile:free_power:watts',
  freeIdle: 'gpu_textfile:free_idle:bool',
  reservationsRead: 'gpu_textfile:reservations_read:bool',
  reservedIdle: 'gpu_textfile:reservation_idle:bool',
} as const;

/**
 * The five-minute rules (examples/prometheus/gpu-textfile-report-5m.rules.yml): each a count, sum,
 * peak or increase over five minutes of collections, which an hour's twelve add up to.
 */
export const FIVE_MINUTE = {
  successCount: 'gpu_textfile:collector_success:count_5m',
  successSum: 'gpu_textfile:collector_success:sum_5m',
  errorCount: 'gpu_textfile:collector_error:count_5m',
  upCount: 'gpu_textfile:up:count_5m',
  upSum: 'gpu_textfile:up:sum_5m',
  utilCount: 'gpu_textfile:utilization:count_5m',
  utilSum: 'gpu_textfile:utilization:sum_5m',
  memoryMax: 'gpu_textfile:memory_used_bytes:max_5m',
  memoryTotalMax: 'gpu_textfile:memory_total_bytes:max_5m',
  powerCount: 'gpu_textfile:power_watts:count_5m',
  powerSum: 'gpu_textfile:power_watts:sum_5m',
  temperatureMax: 'gpu_textfile:temperature_celsius:max_5m',
  energyIncrease: 'gpu_textfile:energy_joules:increase_5m',
  idleHeldSum: 'gpu_textfile:idle_held:sum_5m',
  idleHeldCount: 'gpu_textfile:idle_held:count_5m',
  holderCount: 'gpu_textfile:holder:count_5m',
  holderUtilSum: 'gpu_textfile:holder_utilization:sum_5m',
  holderUtilCount: 'gpu_textfile:holder_utilization:count_5m',
  holderPowerSum: 'gpu_textfile:holder_power:sum_5m',
  holderPowerCount: 'gpu_textfile:holder_power:count_5m',
  holderIdleSum: 'gpu_textfile:holder_idle:sum_5m',
  holderIdleCount: 'gpu_textfile:holder_idle:count_5m',
  reservationCount: 'gpu_textfile:reservation:count_5m',
  reservedIdleSum: 'gpu_textfile:reservation_idle:sum_5m',
  reservedIdleCount: 'gpu_textfile:reservation_idle:count_5m',
  reservationsCount: 'gpu_textfile:reservations:count_5m',
  freeSum: 'gpu_textfile:free:sum_5m',
  freeCount: 'gpu_textfile:free:count_5m',
  freeUtilSum: 'gpu_textfile:free_utilization:sum_5m',
  freeUtilCount: 'gpu_textfile:free_utilization:count_5m',
  freePowerSum: 'gpu_textfile:free_power:sum_5m',
  freePowerCount: 'gpu_textfile:free_power:count_5m',
  freeIdleSum: 'gpu_textfile:free_idle:sum_5m',
  freeIdleCount: 'gpu_textfile:free_idle:count_5m',
} as const;

/**
 * The sets of rules the report tells apart: each is read only where its marker shows it held. The
 * five-minute set answers every question of an hour it covers; the others one question each.
 */
export type RuleSet = 'idle' | 'holders' | 'reservations' | 'fiveMinute';

/** Which rule sets the report reads (for the range, or for one window). */
export type RecordedRules = Record<RuleSet, boolean>;

/** No rule read: every question asked as a subquery. */
export const NO_RULES: RecordedRules = { idle: false, holders: false, reservations: false, fiveMinute: false };

/** What an answer's values fill: the host's samples, a GPU's bucket, a job's hour, a reserving job's hour. */
export type QueryTarget = 'host' | 'gpu' | 'job' | 'free' | 'reserved';

/** One question: its name (the key its answers are filed under), the PromQL for a window, and why it is asked. */
export interface StoreQuery {
  name: string;
  target: QueryTarget;
  why: string;
  /** The expression for a window of `rangeMs` ending at the evaluation time; `stepMs` re-samples a subquery. */
  expr: (rangeMs: number, stepMs: number) => string;
}

/** Who the report is about: the label that names a host, and the --host and --task it was given. */
export interface StoreSubject {
  hostLabel: string;
  host?: string;
  task?: string;
}

/** Who the report is about, and which recording rules the store keeps over the range. */
export interface StoreScope extends StoreSubject {
  recorded: RecordedRules;
}

/** A label value inside double quotes in PromQL (the same escapes as Go's strings). */
const quoted = (value: string) => JSON.stringify(value);
/** A value as an RE2 pattern matching it alone. */
const literal = (value: string) => value.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');

/**
 * The matchers every selector carries. A series without a `task` label is the task `default`, as
 * collect names it: the textfile has no task label unless the scrape adds one.
 */
export function matchers(scope: StoreSubject): string {
  const parts: string[] = [];
  if (scope.host !== undefined) parts.push(`${scope.hostLabel}=${quoted(scope.host)}`);
  if (scope.task !== undefined)
    parts.push(scope.task === 'default' ? `task=~${quoted('|default')}` : `task=~${quoted(literal(scope.task))}`);
  return parts.join(',');
}

/** The selectors whose presence says the store holds our series, for the series API. */
export const presenceMatchers = (scope: StoreSubject): string[] => [
  `${METRIC.success}{${matchers(scope)}}`,
  `${METRIC.up}{${matchers(scope)}}`,
];

/**
 * Each rule set's marker, a rule of it with a value wherever its `source` has a sample (a rule about
 * jobs has none while no job holds a GPU), and that source. The idle set is the rules file's first;
 * the holder set came later (a store may keep an older file's two rules only); the reservation set
 * later still (its marker is a rule of its own, so a file with the reservation rule but no marker is
 * taken as not having it).
 */
export const RULE_SETS: Readonly<Record<RuleSet, { marker: string; source: string; counts?: boolean }>> = {
  idle: { marker: RECORDED.idleHeld, source: METRIC.utilization },
  holders: { marker: RECORDED.free, source: METRIC.holders },
  reservations: { marker: RECORDED.reservationsRead, source: METRIC.reservations },
  // Its marker's values are the source's samples in five minutes (a host's series: cheap to count).
  fiveMinute: { marker: FIVE_MINUTE.successCount, source: METRIC.success, counts: true },
};

/** Every rule set, in RULE_SETS' order. */
export const RULE_SET_NAMES = Object.keys(RULE_SETS) as RuleSet[];

/** Which rule sets `read` says are read. */
export const ruleSetsWhere = (read: (set: RuleSet) => boolean): RecordedRules =>
  Object.fromEntries(RULE_SET_NAMES.map((set) => [set, read(set)])) as RecordedRules;

/** The markers' series, for the series API: which sets the store has at all over the range. */
export const recordedMatchers = (scope: StoreSubject): string[] =>
  Object.values(RULE_SETS).map(({ marker }) => `${marker}{${matchers(scope)}}`);

/** Which rule sets the series API's answer for recordedMatchers shows. */
export const recordedRules = (series: readonly Record<string, string>[]): RecordedRules => {
  const has = (set: RuleSet) => series.some((s) => s.__name__ === RULE_SETS[set].marker);
  return ruleSetsWhere(has);
};

/**
 * A rule set's coverage of a window, per host and task: its marker's samples over its source's (the
 * five-minute marker's values are counts of its source's samples). Near 1 where the rules ran over
 * the whole window; less where they were loaded in it, where a gap was backfilled after they were
 * (`export`), or where a store behind a Thanos has not loaded them; 0 for a host whose source has
 * samples and its marker none. Per host: one host's hour missing among a hundred is still missing.
 */
export const coverage = (scope: StoreSubject, set: RuleSet, rangeMs: number): string => {
  const sel = `{${matchers(scope)}}`;
  const { marker, source, counts } = RULE_SETS[set];
  const by = `(${scope.hostLabel},task)`;
  const samples = `sum by${by} (count_over_time(${source}${sel}[${rangeMs}ms]))`;
  const marked = `sum by${by} (${counts ? 'sum' : 'count'}_over_time(${marker}${sel}[${rangeMs}ms]))`;
  return `(${marked} or on${by} (${samples} * 0)) / on${by} ${samples}`;
};

const MIB = 1_048_576;

/** Every question the report asks for one window, in the order they are asked. */
export function storeQueries(scope: StoreScope): StoreQuery[] {
  const sel = matchers(scope) === '' ? '' : `{${matchers(scope)}}`;
  const on = `on(${scope.hostLabel},task,gpu,uuid)`;
  const m = (name: string) => `${name}${sel}`;
  const idleUtil = FINDING_THRESHOLDS.idleMaxUtilization / 100;
  const idleMemBytes = FINDING_THRESHOLDS.idleMinMemoryMib * MIB;
  const q = (name: string, target: QueryTarget, why: string, expr: StoreQuery['expr']): StoreQuery => ({ name, target, why, expr });
  const r = (ms: number) => `${ms}ms`;
  const sub = (inner: string, rangeMs: number, stepMs: number) => `(${inner})[${r(rangeMs)}:${r(stepMs)}]`;
  const free = `(${m(METRIC.holders)} == 0)`;
  // Per job that reserved a GPU, at one collection: 1 when it ran something there (a holder of the
  // same job), else 0; and 1 when the GPU was at or over the idle utilization (or had no reading:
  // the trail counts a sample idle only by a utilization under it), else 0. Each series as it was
  // within two collections (`last_over_time`), not the store's lookback (Prometheus: 5 minutes, and
  // a backfilled series has no staleness marker): a job that stopped while its reservation went on
  // would otherwise read as running for 5 minutes more, 20 samples at 15 s short of idle.
  const fresh = (selector: string, stepMs: number) => `last_over_time(${selector}[${r(2 * stepMs)}])`;
  const onJob = `on(${scope.hostLabel},task,gpu,uuid,job_kind,job_id)`;
  const reservedIdle = (s: number) => {
    const reserved = fresh(m(METRIC.reservation), s);
    const ran = `((${reserved} * ${onJob} group_left() max by(${scope.hostLabel},task,gpu,uuid,job_kind,job_id) (${fresh(m(METRIC.holder), s)})) or (${reserved} * 0))`;
    const busy = `((${reserved} * ${on} group_left() (${fresh(m(METRIC.utilization), s)} >= bool ${idleUtil})) or (${reserved} * 0 + 1))`;
    return `1 - ${ran} * ${busy}`;
  };
  // A rule's value per collection, averaged over the window: what the subquery beside it re-samples.
  const recorded = (name: string, w: number) => `avg_over_time(${m(name)}[${r(w)}])`;
  const { idle, holders, reservations } = scope.recorded;
  const questions = [
    q(
      'host_samples',
      'host',
      "collections the host's collector ran: its rows, and the gaps between",
      (w) => `count_over_time(${m(METRIC.success)}[${r(w)}])`,
    ),
    q(
      'host_failures',
      'host',
      'failed collections: an error sample for every GPU of the host',
      (w) => `count_over_time(${m(METRIC.success)}[${r(w)}]) - sum_over_time(${m(METRIC.success)}[${r(w)}])`,
    ),
    q('host_errors', 'host', 'why collections failed, by reason', (w) => `count_over_time(${m(METRIC.error)}[${r(w)}])`),
    q('samples', 'gpu', "the GPU's samples", (w) => `count_over_time(${m(METRIC.up)}[${r(w)}])`),
    q(
      'down',
      'gpu',
      'samples the GPU did not answer (lost, unreadable): error samples',
      (w) => `count_over_time(${m(METRIC.up)}[${r(w)}]) - sum_over_time(${m(METRIC.up)}[${r(w)}])`,
    ),
    q('util_n', 'gpu', 'samples with a utilization', (w) => `count_over_time(${m(METRIC.utilization)}[${r(w)}])`),
    q('util_sum', 'gpu', 'utilization summed: the busy share', (w) => `sum_over_time(${m(METRIC.utilization)}[${r(w)}])`),
    q('mem_max', 'gpu', 'peak memory used: memory growth, idle with memory', (w) => `max_over_time(${m(METRIC.memoryUsed)}[${r(w)}])`),
    q('mem_total', 'gpu', "the GPU's memory size, for the charts", (w) => `max_over_time(${m(METRIC.memoryTotal)}[${r(w)}])`),
    q('power_n', 'gpu', 'samples with a power reading', (w) => `count_over_time(${m(METRIC.power)}[${r(w)}])`),
    q('power_sum', 'gpu', 'power summed: energy as power x time', (w) => `sum_over_time(${m(METRIC.power)}[${r(w)}])`),
    q('temp_max', 'gpu', 'peak temperature', (w) => `max_over_time(${m(METRIC.temperature)}[${r(w)}])`),
    q(
      'energy',
      'gpu',
      "energy from the board's counter where it has one (NVML), else power x time",
      (w) => `increase(${m(METRIC.energy)}[${r(w)}])`,
    ),
    q('idle_held', 'gpu', 'the share of samples under the idle utilization while holding the idle memory', (w, s) =>
      idle
        ? recorded(RECORDED.idleHeld, w)
        : `avg_over_time(${sub(`(${m(METRIC.utilization)} < bool ${idleUtil}) * (${m(METRIC.memoryUsed)} >= bool ${idleMemBytes})`, w, s)})`,
    ),
    q(
      'job_samples',
      'job',
      "each job's samples on each GPU (nvidia_gpu_holder_info)",
      (w) => `count_over_time(${m(METRIC.holder)}[${r(w)}])`,
    ),
    q('job_util', 'job', "the GPU's utilization while the job held it", (w, s) =>
      holders
        ? recorded(RECORDED.jobUtil, w)
        : `avg_over_time(${sub(`${m(METRIC.holder)} * ${on} group_left() ${m(METRIC.utilization)}`, w, s)})`,
    ),
    q('job_power', 'job', "the job's share of the GPU's power (equal shares of the jobs holding it)", (w, s) =>
      holders
        ? recorded(RECORDED.jobPower, w)
        : `avg_over_time(${sub(`${m(METRIC.holder)} * ${on} group_left() (${m(METRIC.power)} / ${on} ${m(METRIC.holders)})`, w, s)})`,
    ),
    q('job_idle', 'job', 'the share of its samples the job held the GPU under the idle utilization', (w, s) =>
      idle
        ? recorded(RECORDED.jobIdle, w)
        : `avg_over_time(${sub(`${m(METRIC.holder)} * ${on} group_left() (${m(METRIC.utilization)} < bool ${idleUtil})`, w, s)})`,
    ),
    q(
      'reserved_samples',
      'reserved',
      "each job's samples reserving each GPU (nvidia_gpu_reservation_info), running on it or not",
      (w) => `count_over_time(${m(METRIC.reservation)}[${r(w)}])`,
    ),
    q(
      'reserved_idle',
      'reserved',
      'the share of those samples the job ran nothing on the GPU or the GPU sat under the idle utilization',
      (w, s) => (reservations ? recorded(RECORDED.reservedIdle, w) : `avg_over_time(${sub(reservedIdle(s), w, s)})`),
    ),
    q(
      'reserved_read',
      'gpu',
      "samples that said who reserved the GPU (nvidia_gpu_reservations): its task's jobs get their reserved columns",
      (w) => `count_over_time(${m(METRIC.reservations)}[${r(w)}])`,
    ),
    q('free_share', 'free', 'the share of samples no job held the GPU (`none` in --by job)', (w, s) =>
      holders ? recorded(RECORDED.free, w) : `avg_over_time(${sub(`${m(METRIC.holders)} == bool 0`, w, s)})`,
    ),
    q('free_util', 'free', "the GPU's utilization while free", (w, s) =>
      holders ? recorded(RECORDED.freeUtil, w) : `avg_over_time(${sub(`${m(METRIC.utilization)} and ${on} ${free}`, w, s)})`,
    ),
    q('free_power', 'free', "the GPU's power while free", (w, s) =>
      holders ? recorded(RECORDED.freePower, w) : `avg_over_time(${sub(`${m(METRIC.power)} and ${on} ${free}`, w, s)})`,
    ),
    q('free_idle', 'free', 'the share of free samples under the idle utilization', (w, s) =>
      holders
        ? recorded(RECORDED.freeIdle, w)
        : `avg_over_time(${sub(`(${m(METRIC.utilization)} < bool ${idleUtil}) and ${on} ${free}`, w, s)})`,
    ),
  ];
  if (!scope.recorded.fiveMinute) return questions;
  const fromRules = fiveMinuteAnswers(m);
  return questions.map((question) => ({ ...question, expr: fromRules[question.name]! }));
}

/**
 * Every question, as the five-minute rules answer it for a whole hour (`rangeMs`: their twelve
 * samples in it): counts and sums add up, peaks are the largest, shares are the hour's sum over its
 * count (what `avg_over_time` of a subquery is).
 */
function fiveMinuteAnswers(m: (name: string) => string): Record<string, StoreQuery['expr']> {
  const F = FIVE_MINUTE;
  const over = (fn: 'sum' | 'max', name: string, w: number) => `${fn}_over_time(${m(name)}[${w}ms])`;
  const sum = (name: string) => (w: number) => over('sum', name, w);
  const max = (name: string) => (w: number) => over('max', name, w);
  const less = (all: string, part: string) => (w: number) => `${over('sum', all, w)} - ${over('sum', part, w)}`;
  const share = (part: string, all: string) => (w: number) => `${over('sum', part, w)} / ${over('sum', all, w)}`;
  return {
    host_samples: sum(F.successCount),
    host_failures: less(F.successCount, F.successSum),
    host_errors: sum(F.errorCount),
    samples: sum(F.upCount),
    down: less(F.upCount, F.upSum),
    util_n: sum(F.utilCount),
    util_sum: sum(F.utilSum),
    mem_max: max(F.memoryMax),
    mem_total: max(F.memoryTotalMax),
    power_n: sum(F.powerCount),
    power_sum: sum(F.powerSum),
    temp_max: max(F.temperatureMax),
    energy: sum(F.energyIncrease),
    idle_held: share(F.idleHeldSum, F.idleHeldCount),
    job_samples: sum(F.holderCount),
    job_util: share(F.holderUtilSum, F.holderUtilCount),
    job_power: share(F.holderPowerSum, F.holderPowerCount),
    job_idle: share(F.holderIdleSum, F.holderIdleCount),
    reserved_samples: sum(F.reservationCount),
    reserved_idle: share(F.reservedIdleSum, F.reservedIdleCount),
    reserved_read: sum(F.reservationsCount),
    free_share: share(F.freeSum, F.freeCount),
    free_util: share(F.freeUtilSum, F.freeUtilCount),
    free_power: share(F.freePowerSum, F.freePowerCount),
    free_idle: share(F.freeIdleSum, F.freeIdleCount),
  };
}
