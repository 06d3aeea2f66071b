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

function readLabels(text: string, at: number, line: number, problems: string[]): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = at;
  while (text[i] !== '}') {
    const name = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i))?.[0];
    if (!name || text[i + name.length] !== '=' || text[i + name.length + 1] !== '"') {
      problems.push(`line ${line}: malformed label set`);
      return [labels, -1];
    }
    i += name.length + 2;
    let value = '';
    for (; i < text.length && text[i] !== '"'; i++) {
      if (text[i] === '\\') {
        const next = text[++i];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else {
          problems.push(`line ${line}: invalid escape \\${next ?? ''} in label ${name}`);
          return [labels, -1];
        }
      } else value += text[i];
    }
    if (i >= text.length) {
      problems.push(`line ${line}: unterminated label value`);
      return [labels, -1];
    }
    if (name in labels) problems.push(`line ${line}: label ${name} twice`);
    labels[name] = value;
    i++;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') {
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
  const help = new Map<string, string>();
  const types = new Map<string, string>();
  const closed = new Set<string>();
  const seen = new Set<string>();
  const labelNames = new Map<string, string>();
  const withSamples = new Set<string>();
  let current: string | undefined;
  if (text !== '' && !text.endsWith('\n')) problems.push('no final newline');
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();

  const enter = (family: string, line: number) => {
    if (family === current) return;
    if (closed.has(family)) problems.push(`line ${line}: family ${family} is not contiguous`);
    if (current) closed.add(current);
    current = family;
  };

  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.startsWith('#')) {
      const meta = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(raw);
      if (!meta) return; // a plain comment
      const [, keyword, name, rest = ''] = meta;
      if (!METRIC_NAME.test(name!)) problems.push(`line ${line}: invalid metric name ${name}`);
      enter(name!, line);
      const store = keyword === 'HELP' ? help : types;
      if (store.has(name!)) problems.push(`line ${line}: second ${keyword} for ${name}`);
      if (keyword === 'TYPE' && !['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) {
        problems.push(`line ${line}: unknown type ${rest}`);
      }
      if (keyword === 'TYPE' && withSamples.has(name!)) problems.push(`line ${line}: TYPE after samples of ${name}`);
      store.set(name!, rest);
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
    const base = SUFFIXES.filter((s) => name.endsWith(s)).map((s) => name.slice(0, -s.length)).find((b) => types.has(b));
    const family = types.has(name) ? name : (base ?? name);
    withSamples.add(family);
    enter(family, line);
    for (const label of Object.keys(labels)) if (!LABEL_NAME.test(label) || label.startsWith('__')) problems.push(`line ${line}: invalid label name ${label}`);
    const names = Object.keys(labels).sort().join(',');
    const before = labelNames.get(family);
    if (before !== undefined && before !== names) problems.push(`line ${line}: ${family} has labels {${names}} here and {${before}} before`);
    labelNames.set(family, names);
    const key = `${name}{${Object.entries(labels).sort().map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',')}}`;
    if (seen.has(key)) problems.push(`line ${line}: duplicate series ${key}`);
    seen.add(key);
    samples.push({ name, labels, value });
  });
  return { samples, help, types, problems };
}
