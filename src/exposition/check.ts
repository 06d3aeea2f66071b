import { LABEL_NAME, METRIC_NAME } from './escape.js';

/** A sample as read back from exposition text. */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface ParsedExposition {
  samples: ParsedSample[];
  help: Map<string, string>;
  types: Map<string, string>;
  problems: string[];
}

const SUFFIXES = ['_bucket', '_sum', '_count'];
const META = /^# (HELP|TYPE) (\S+)(?: (.*))?$/;
const TYPE_NAMES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** The family a sample belongs to: its name's, or a histogram's or summary's whose _bucket, _sum or _count it is. */
const familyOf = (name: string, types: ReadonlyMap<string, string>): string =>
  types.has(name)
    ? name
    : (SUFFIXES.filter((s) => name.endsWith(s))
        .map((s) => name.slice(0, -s.length))
        .find((b) => types.has(b)) ?? name);

/** What both readers of a text keep: its HELP and TYPE lines, the families met (in order) and those with samples. */
interface Reading {
  help: Map<string, string>;
  types: Map<string, string>;
  withSamples: Set<string>;
  /** Families left for another: meeting one again breaks contiguity. */
  closed: Set<string>;
  current?: string;
}

const newReading = (): Reading => ({ help: new Map(), types: new Map(), withSamples: new Set(), closed: new Set() });

/** Moves the reading on to `family`; what that breaks (a family met again after another), if anything. */
function enterFamily(reading: Reading, family: string): string | undefined {
  if (family === reading.current) return undefined;
  const problem = reading.closed.has(family) ? `family ${family} is not contiguous` : undefined;
  if (reading.current) reading.closed.add(reading.current);
  reading.current = family;
  return problem;
}

/** Reads a HELP or TYPE line (META's match) into `reading`; what it breaks, in the order checkExposition says it. */
function readMeta(reading: Reading, meta: RegExpExecArray): string[] {
  const [, keyword, name, rest = ''] = meta as unknown as [string, string, string, string | undefined];
  const problems: string[] = [];
  if (!METRIC_NAME.test(name)) problems.push(`invalid metric name ${name}`);
  const entered = enterFamily(reading, name);
  if (entered) problems.push(entered);
  const store = keyword === 'HELP' ? reading.help : reading.types;
  if (store.has(name)) problems.push(`second ${keyword} for ${name}`);
  if (keyword === 'TYPE' && !TYPE_NAMES.has(rest)) problems.push(`unknown type ${rest}`);
  if (keyword === 'TYPE' && reading.withSamples.has(name)) problems.push(`TYPE after samples of ${name}`);
  store.set(name, rest);
  return problems;
}

// name="value" with only the three escapes the format allows, then an optional comma.
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,?)/y;
const unescapeLabel = (value: string) => (value.includes('\\') ? value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c)) : value);

function readLabels(text: string, at: number, line: number, problems: string[]): [Record<string, string>, number] {
  // No prototype: a label named constructor is not there already, and one named __proto__ is a label.
  const labels: Record<string, string> = Object.create(null);
  let i = at;
  while (text[i] !== '}') {
    LABEL_PAIR.lastIndex = i;
    const match = LABEL_PAIR.exec(text);
    if (!match) {
      const bad = /\\[^\\"n]/.exec(text.slice(i));
      problems.push(bad ? `line ${line}: invalid escape ${bad[0]} in a label value` : `line ${line}: malformed label set`);
      return [labels, -1];
    }
    const [whole, name, value, comma] = match as unknown as [string, string, string, string];
    if (name in labels) problems.push(`line ${line}: label ${name} twice`);
    labels[name] = unescapeLabel(value);
    i += whole.length;
    if (!comma && text[i] !== '}') {
      problems.push(`line ${line}: expected , or } after label ${name}`);
      return [labels, -1];
    }
  }
  return [labels, i + 1];
}

/**
 * Reads exposition text and lists every rule it breaks: one HELP and TYPE per family, before its
 * samples; families contiguous; no duplicate series; the same label names throughout a family;
 * valid names and escapes; no timestamps; a final newline.
 */
export function checkExposition(text: string): ParsedExposition {
  const problems: string[] = [];
  const samples: ParsedSample[] = [];
  const reading = newReading();
  const seen = new Set<string>();
  const labelNames = new Map<string, string>();
  if (text !== '' && !text.endsWith('\n')) problems.push('no final newline');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();

  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.startsWith('#')) {
      const meta = META.exec(raw);
      if (!meta) return; // a plain comment
      for (const problem of readMeta(reading, meta)) problems.push(`line ${line}: ${problem}`);
      return;
    }
    if (raw.trim() === '') {
      problems.push(`line ${line}: empty line`);
      return;
    }
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(raw)?.[0];
    if (!name) {
      problems.push(`line ${line}: not a sample: ${raw.slice(0, 80)}`);
      return;
    }
    let rest = raw.slice(name.length);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) {
      const [parsed, end] = readLabels(rest, 1, line, problems);
      if (end < 0) return;
      labels = parsed;
      rest = rest.slice(end);
    }
    const parts = rest.trim().split(/\s+/);
    if (!rest.startsWith(' ') || parts.length === 0) {
      problems.push(`line ${line}: no value`);
      return;
    }
    if (parts.length > 1) problems.push(`line ${line}: has a timestamp`);
    const value = parts[0] === '+Inf' ? Infinity : parts[0] === '-Inf' ? -Infinity : Number(parts[0]);
    if (parts[0] !== 'NaN' && Number.isNaN(value)) problems.push(`line ${line}: invalid value ${parts[0]}`);
    const family = familyOf(name, reading.types);
    reading.withSamples.add(family);
    const entered = enterFamily(reading, family);
    if (entered) problems.push(`line ${line}: ${entered}`);
    const sortedNames = Object.keys(labels).sort();
    for (const label of sortedNames)
      if (!LABEL_NAME.test(label) || label.startsWith('__')) problems.push(`line ${line}: invalid label name ${label}`);
    const names = sortedNames.join(',');
    const before = labelNames.get(family);
    if (before !== undefined && before !== names)
      problems.push(`line ${line}: ${family} has labels {${names}} here and {${before}} before`);
    labelNames.set(family, names);
    // As JSON: a value may hold any character, a separator's too, and two series must not share a key.
    const key = JSON.stringify([name, ...sortedNames.flatMap((k) => [k, labels[k]])]);
    if (seen.has(key)) problems.push(`line ${line}: duplicate series ${raw.slice(0, raw.lastIndexOf(' '))}`);
    seen.add(key);
    samples.push({ name, labels, value });
  });
  return { samples, help: reading.help, types: reading.types, problems };
}

// A sample line as render() writes it: a name; none, or name="value" pairs in braces (only the three
// escapes, a comma between pairs and none after the last); one space; a value with no space in it.
const RENDERED_SAMPLE =
  /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",)*[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")\})? (\S+)$/;
/** The longest line read the quick way: render()'s are far shorter (the longest value, a process name, is a path). */
const LONGEST_LINE = 64 * 1024;
// What is left of such a label set without its ="values": its names, in the order written, between commas.
const LABEL_VALUES = /="(?:[^"\\\n]|\\[\\"n])*"/g;

/** Whether `names` are the label names `key` had first (and now has, where it had none yet). */
function sameNames(first: Map<string, string>, key: string, names: string): boolean {
  const before = first.get(key);
  if (before === undefined) first.set(key, names);
  return before === undefined || before === names;
}

// checkExposition reads every label of every line apart and builds a sample of it: 6 to 8 ms for an
// 8-GPU host's text on the development machine, run once per process, after nvidia-smi's answer and
// before the file is published (issue 41). This reads the same text in about a millisecond.
/**
 * Whether `text` breaks none of checkExposition's rules, read the quick way: each sample line by
 * one pattern of what render() writes, each family's label names once. It answers true only where
 * checkExposition would find no problem, and false at anything it does not read that way (a rule
 * broken, or only written differently: labels in another order, a trailing comma, a timestamp).
 */
export function readsAsRendered(text: string): boolean {
  if (text !== '' && !text.endsWith('\n')) return false;
  const lines = text.split('\n');
  lines.pop();
  const reading = newReading();
  /** Each family's label names, and each sample name's, as its first sample wrote them. */
  const familyNames = new Map<string, string>();
  const sampleNames = new Map<string, string>();
  /** Each list of label names seen: whether it is free of reserved names and of a name twice. */
  const namesFine = new Map<string, boolean>();
  const series = new Set<string>();
  for (let index = 0; index < lines.length; index++) {
    const raw = lines[index]!;
    if (raw.startsWith('#')) {
      const meta = META.exec(raw);
      if (!meta) continue; // a plain comment
      if (readMeta(reading, meta).length > 0) return false;
      continue;
    }
    // A line over LONGEST_LINE goes the long way: the pattern keeps a backtrack point per label pair,
    // and millions of them run V8's regular expressions out of stack (a RangeError, not a false).
    const sample = raw.length <= LONGEST_LINE ? RENDERED_SAMPLE.exec(raw) : null;
    if (!sample) return false;
    const name = sample[1]!;
    const value = sample[3]!;
    if (value !== 'NaN' && value !== '+Inf' && value !== '-Inf' && Number.isNaN(Number(value))) return false;
    const family = familyOf(name, reading.types);
    reading.withSamples.add(family);
    if (enterFamily(reading, family)) return false;
    const labels = sample[2] ?? '';
    const names = labels === '' ? '' : labels.replace(LABEL_VALUES, '');
    let fine = namesFine.get(names);
    if (fine === undefined) {
      const list = names === '' ? [] : names.split(',');
      fine = new Set(list).size === list.length && list.every((label) => !label.startsWith('__'));
      namesFine.set(names, fine);
    }
    if (!fine) return false;
    if (!sameNames(familyNames, family, names) || !sameNames(sampleNames, name, names)) return false;
    // One order of label names per sample name and one way to escape a value: equal text, equal series.
    const key = `${name}{${labels}`;
    if (series.has(key)) return false;
    series.add(key);
  }
  return true;
}

/** checkExposition's problems with `text`: none at once where the text reads as render() writes it. */
export const expositionProblems = (text: string): string[] => (readsAsRendered(text) ? [] : checkExposition(text).problems);

/** A series' labels as render() takes them: [name, value] pairs. */
type Labels = readonly (readonly [string, string])[];

/** What checkFamilies works out once per labels array: its names joined, its values as JSON (any character may be in one), the invalid names. */
export interface LabelsDescription {
  names: string;
  values: string;
  invalid: string[];
}

/**
 * The format's rules checked on the families a text is rendered from, without rendering or parsing:
 * valid and unique family names, valid label names, one label set per family, no duplicate series.
 * render() then guarantees the rest (one HELP and TYPE each, contiguity, escaping, no timestamps,
 * the final newline). Cheap enough for every sample of daemon mode.
 */
export function checkFamilies(
  families: readonly { name: string; samples: readonly { labels: Labels }[] }[],
  // Series share labels arrays (a GPU's, in every family): each array is looked at once (once per
  // run where the publisher keeps this and its arrays, as render's memo).
  described: WeakMap<Labels, LabelsDescription> = new WeakMap(),
): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  const describe = (labels: Labels) => {
    let description = described.get(labels);
    if (!description) {
      const labelNames = labels.map(([label]) => label);
      const invalid = labelNames.filter((label) => !LABEL_NAME.test(label) || label.startsWith('__'));
      description = { names: labelNames.join(','), values: JSON.stringify(labels.map(([, value]) => value)), invalid };
      described.set(labels, description);
    }
    return description;
  };
  for (const family of families) {
    if (!METRIC_NAME.test(family.name)) problems.push(`invalid metric name ${family.name}`);
    if (names.has(family.name)) problems.push(`family ${family.name} twice`);
    names.add(family.name);
    const first = family.samples[0] && describe(family.samples[0].labels).names;
    const series = new Set<string>();
    for (const sample of family.samples) {
      const { names: labelNames, values, invalid } = describe(sample.labels);
      if (labelNames !== first) problems.push(`${family.name} has labels {${labelNames}} and {${first}}`);
      for (const label of invalid) problems.push(`${family.name}: invalid label name ${label}`);
      if (series.has(values))
        problems.push(`duplicate series ${family.name}{${sample.labels.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}}`);
      series.add(values);
    }
  }
  return problems;
}

/**
 * Whether `families` have the very series `checked` had, in the same order: the same family names,
 * and each series the very same labels array. checkFamilies' verdict depends on nothing else, so a
 * publisher that keeps its arrays from one sample to the next (metrics.ts) checks a sample's
 * families again only when a series came or went. Arrays equal but not the same count as different.
 */
export function sameSeries(
  families: readonly { name: string; samples: readonly { labels: Labels }[] }[],
  checked: readonly { name: string; samples: readonly { labels: Labels }[] }[],
): boolean {
  if (families.length !== checked.length) return false;
  for (let f = 0; f < families.length; f++) {
    const now = families[f]!;
    const before = checked[f]!;
    if (now.name !== before.name || now.samples.length !== before.samples.length) return false;
    for (let i = 0; i < now.samples.length; i++) if (now.samples[i]!.labels !== before.samples[i]!.labels) return false;
  }
  return true;
}
