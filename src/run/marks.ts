import { setFlagsFromString } from 'node:v8';

/**
 * What a line of the job's output says about its progress: the step number and named values
 * (`loss=0.31`). The regex is the user's (--mark) or DEFAULT_MARK; it is checked at parse time.
 */

/**
 * `step 120`, `step=120`, `Step: 120/5000`, `global_step=120` and `[120/5000]`. JavaScript (Node 20)
 * allows one group per name, so the bracket form reaches the same `step` group through a lookahead.
 */
export const DEFAULT_MARK = '(?:(?:\\b|_)[Ss]tep[\\s=:#]*|\\[(?=\\d+/\\d+\\]))(?<step>\\d+)';

/** `name=0.31`, `name: 0.31`; `name 1e-4` is not (`epoch 2`, `rank 0`, `GPU 3` are no values): a value must follow = or :. */
const NAMED_NUMBER = /(?:^|[^\w.])([A-Za-z_][\w.]{0,31})\s*[=:]\s*(-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.])/g;

/**
 * `loss 0.250`, one of the commonest forms, without = or :: taken for the names of what training logs
 * report (a loss of any kind, the learning rate, accuracy, perplexity, the gradient's norm) and no
 * other name, so `epoch 2` or `batch 32` stay no marks.
 */
const SPACED_METRIC =
  /(?:^|[^\w.])((?:[A-Za-z][\w.]{0,26}_)?loss|lr|learning_rate|acc|accuracy|ppl|perplexity|grad_norm)\s+(-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?![\w.:=/])/gi;

/** Every name=number and spaced metric of `line`, in the order they come, each name once. */
function namedNumbers(line: string): RegExpMatchArray[] {
  const all = [...line.matchAll(NAMED_NUMBER), ...line.matchAll(SPACED_METRIC)].sort((a, b) => a.index! - b.index!);
  return all.filter((m, i) => all.findIndex((other) => other[1] === m[1]) === i);
}

/** At most this many marks per line, each value at most this long: the CSV cell stays small. */
const MAX_MARKS = 8;
const MAX_MARK_CHARS = 64;

/** A line that matched: the step (when the regex has a `step` group and it held a whole number) and the other values. */
export interface Mark {
  step?: number;
  marks: [string, string][];
}

/**
 * --mark's text -> the regex, or the one line that says why not (exit 2). A user's pattern runs on
 * V8's linear-time engine (the `l` flag): every line is matched in time proportional to its length,
 * so no pattern can backtrack for ever on a line of the job's (`^(a+)+$` on forty `a` and a `!` took
 * the backtracking engine minutes, the job's output and our signals waiting). What that engine cannot
 * run (backreferences, lookaround, counted repeats over its limit) is refused here. The default
 * pattern, ours and tested, needs a lookahead and keeps the usual engine.
 */
export function parseMarkRegex(text: string): RegExp | string {
  const linear = text !== DEFAULT_MARK;
  let regex: RegExp;
  try {
    regex = linear && linearEngine() ? new RegExp(text, LINEAR_FLAG) : new RegExp(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    if (/linear time/.test(error.message))
      return `--mark: ${JSON.stringify(text)} cannot be matched in linear time (a backreference, a lookahead or lookbehind, or a large {n,m}): write it without`;
    return `--mark: ${JSON.stringify(text)} is not a regular expression: ${error.message}`;
  }
  // A regex that matches the empty string would mark every line, and says nothing about progress.
  if (regex.test('')) return `--mark: ${JSON.stringify(text)} matches an empty line: it would mark every line`;
  return regex;
}

/**
 * Whether V8's linear-time engine takes the `l` flag: it is behind a V8 flag, set here (a flag of the
 * regex engine only). Should a Node.js without it come, patterns run on the usual engine.
 */
// Never a literal (/a/l): a flag the engine does not know fails the whole file as it loads.
const LINEAR_FLAG: string = 'l';

function linearEngine(): boolean {
  setFlagsFromString('--enable-experimental-regexp-engine');
  try {
    new RegExp('a', LINEAR_FLAG);
    return true;
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return false;
  }
}

/** Cut to one short single-line cell value. */
const cellValue = (text: string) =>
  text
    .replace(/[\s,;]+/g, ' ')
    .trim()
    .slice(0, MAX_MARK_CHARS);

/**
 * A line -> its mark, or undefined when the regex does not match. Marks are the regex's named groups
 * other than `step` when it has any; otherwise every `name=number` (or `name: number`, or a training
 * metric's `loss 0.25`) in the line.
 */
export function readMark(line: string, regex: RegExp): Mark | undefined {
  const match = regex.exec(line);
  if (!match) return undefined;
  const groups = match.groups ?? {};
  const stepText = groups.step;
  const step = stepText !== undefined && /^\d{1,15}$/.test(stepText) ? Number(stepText) : undefined;
  const named = Object.entries(groups).filter(([name, value]) => name !== 'step' && value !== undefined);
  const pairs =
    named.length > 0 || Object.keys(groups).some((name) => name !== 'step')
      ? named.map(([name, value]): [string, string] => [name, cellValue(value!)])
      : namedNumbers(line)
          .filter((m) => !/(?:^|_)step$/i.test(m[1]!))
          .map((m): [string, string] => [m[1]!, cellValue(m[2]!)]);
  return { ...(step !== undefined ? { step } : {}), marks: pairs.slice(0, MAX_MARKS) };
}

/** The CSV's marks cell: `loss=0.31 lr=0.0001`. */
export const marksCell = (marks: readonly [string, string][]): string => marks.map(([name, value]) => `${name}=${value}`).join(' ');
