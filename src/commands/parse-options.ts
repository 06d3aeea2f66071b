import type { ArgsOf, OptionTable } from './option-types.js';

const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
export const envName = (name: string) => `GPU_TEXTFILE_${name.replace(/-/g, '_').toUpperCase()}`;

function convert(name: string, type: 'string' | 'boolean' | 'number', text: string): string | number | boolean | Error {
  if (type === 'string') return text;
  if (type === 'number') {
    const value = Number(text);
    return text.trim() === '' || Number.isNaN(value) ? new Error(`--${name}: "${text}" is not a number`) : value;
  }
  if (['true', '1', 'yes', ''].includes(text)) return true;
  if (['false', '0', 'no'].includes(text)) return false;
  return new Error(`--${name}: "${text}" is not true or false`);
}

/** How a list is written in one GPU_TEXTFILE_* variable: items separated by commas or white space
 * (so an item given there cannot contain either; the command line takes any item). */
export const splitList = (text: string): string[] => text.split(/[\s,]+/).filter((item) => item !== '');

/**
 * The values a command's GPU_TEXTFILE_* variables give, converted by the option table (lists split as
 * above), keyed by option name; or the one-line error. The command line overrides each of them.
 */
export function envValues(table: OptionTable, env: NodeJS.ProcessEnv): Record<string, unknown> | string {
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table)) {
    const text = env[envName(name)] ?? (spec.alias === undefined ? undefined : env[envName(spec.alias)]);
    if (text === undefined) continue;
    const items = spec.array ? splitList(text) : [text];
    const converted = items.map((item) => convert(name, spec.type, item));
    const error = converted.find((value) => value instanceof Error);
    if (error) return error.message.replace(`--${name}:`, `${envName(name)}:`);
    values[name] = spec.array ? converted : converted[0];
  }
  return values;
}

/** Edits (insertions, deletions, substitutions) from `a` to `b`. */
function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}

/** The name of `names` closest to a mistyped one, if one is close (at most two edits, and fewer than its length). */
export function closestName(typed: string, names: readonly string[]): string | undefined {
  const [best] = names.map((name) => ({ name, d: editDistance(typed, name) })).sort((x, y) => x.d - y.d);
  return best && best.d <= 2 && best.d < typed.length ? best.name : undefined;
}

/** "Unknown argument: dryrun. Did you mean --dry-run?", as yargs words it, with the option meant where one is close. */
export function unknownOptions(names: readonly string[], table: OptionTable): string {
  const meant = names.flatMap((name) => {
    const near = closestName(name.replace(/^-+/, ''), Object.keys(table));
    return near ? [`--${near}`] : [];
  });
  return `Unknown argument${names.length > 1 ? 's' : ''}: ${names.join(', ')}${meant.length > 0 ? `. Did you mean ${meant.join(', ')}?` : ''}`;
}

/**
 * Parses a command's arguments from its option table the way yargs does for these options: `--name
 * value`, `--name=value`, `--no-name` for booleans, repeatable arrays, defaults, and GPU_TEXTFILE_*
 * variables (read by envValues) for what the command line leaves out. Unknown options are an error. Keys are camelCase.
 */
export function parseOptions<T extends OptionTable>(table: T, args: readonly string[], env: NodeJS.ProcessEnv): ArgsOf<T> | string {
  const given = new Map<string, unknown>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const match = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(arg);
    if (!match) return `Unknown argument: ${arg}`;
    let [, name, inline] = match as unknown as [string, string, string | undefined];
    let negated = false;
    if (!(name in table) && name.startsWith('no-') && table[name.slice(3)]?.type === 'boolean') {
      name = name.slice(3);
      negated = true;
    }
    const spec = table[name];
    if (!spec) return unknownOptions([name], table);
    let value: string | number | boolean | Error;
    if (spec.type === 'boolean') value = negated ? false : inline === undefined ? true : convert(name, 'boolean', inline);
    else {
      const text = inline ?? args[++i];
      if (text === undefined || (inline === undefined && text.startsWith('--'))) return `Not enough arguments following: ${name}`;
      value = convert(name, spec.type, text);
    }
    if (value instanceof Error) return value.message;
    given.set(name, spec.array ? [...((given.get(name) as unknown[]) ?? []), value] : value);
  }
  const fromEnv = envValues(table, env);
  if (typeof fromEnv === 'string') return fromEnv;
  const result: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table)) {
    let value = given.get(name) ?? fromEnv[name];
    value ??= spec.default;
    if (value === undefined && spec.demandOption) return `Missing required argument: ${name}`;
    if (value !== undefined) result[camel(name)] = value;
  }
  // Built by the table's own rules: each option's type, its default or demand, its camelCase key.
  return result as ArgsOf<T>;
}
