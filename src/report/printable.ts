// What a terminal would obey rather than show: C0 and C1 controls, DEL, Unicode's line separators
// and bidirectional overrides. A process's name is chosen by whoever starts it and reaches the
// report through the trail; on a terminal it is shown escaped (\x1b, \n, \u202e), never obeyed.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Text from the trail as a terminal shows it: its unprintable characters escaped. */
export const printable = (text: string): string =>
  text.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return NAMED[c] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
  });
