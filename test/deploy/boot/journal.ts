/** One journal entry, from `journalctl -o json`: the fields the boot tests read. */
export interface JournalEntry {
  /** Seconds since the epoch (__REALTIME_TIMESTAMP). */
  time: number;
  message: string;
  /** The unit a message of systemd's is about (UNIT=). */
  unit?: string;
  messageId?: string;
  invocation?: string;
  /** SYSLOG_IDENTIFIER: `systemd`, `CRON`, the tag given to logger. */
  identifier?: string;
  priority?: number;
}

// systemd's catalog (systemd/catalog/systemd.catalog.in): the messages of a unit's start and result.
export const UNIT_STARTING = '7d4958e842da4a758f6c1cdc7b36dcc5';
export const UNIT_SUCCESS = '7ad2d189f7e94e70a38c781354912448';
export const UNIT_FAILURE = 'd9b373ed55a64feb8242e02dbe79a49c';

/** `journalctl -o json` output -> entries. A MESSAGE that is not UTF-8 comes as an array of bytes. */
export function parseJournal(text: string): JournalEntry[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const fields = JSON.parse(line) as Record<string, unknown>;
      const message = fields.MESSAGE;
      return {
        time: Number(fields.__REALTIME_TIMESTAMP) / 1e6,
        message: typeof message === 'string' ? message : Buffer.from(message as number[]).toString('utf8'),
        unit: fields.UNIT as string | undefined,
        messageId: fields.MESSAGE_ID as string | undefined,
        invocation: fields.INVOCATION_ID as string | undefined,
        identifier: fields.SYSLOG_IDENTIFIER as string | undefined,
        priority: fields.PRIORITY === undefined ? undefined : Number(fields.PRIORITY),
      };
    });
}

/** One activation of a service, as systemd logged it. */
export interface Run {
  invocation: string;
  start: number;
  result?: { ok: boolean; time: number; message: string };
}

/** The activations of `unit` in `entries`, oldest first, each with its result once it has one. */
export function runsOf(entries: readonly JournalEntry[], unit: string): Run[] {
  const ofUnit = entries.filter((entry) => entry.unit === unit && entry.invocation);
  return ofUnit
    .filter((entry) => entry.messageId === UNIT_STARTING)
    .map((start) => {
      const end = ofUnit.find(
        (entry) => entry.invocation === start.invocation && (entry.messageId === UNIT_SUCCESS || entry.messageId === UNIT_FAILURE),
      );
      return {
        invocation: start.invocation!,
        start: start.time,
        result: end && { ok: end.messageId === UNIT_SUCCESS, time: end.time, message: end.message },
      };
    });
}

/**
 * Where each start falls against a calendar that fires every `periodS` seconds from the minute
 * (OnCalendar=*:*:0/15): its mark (periods since the epoch, whose minutes are whole in every time
 * zone) and how long after that mark it came, in seconds.
 */
export const calendarMarks = (starts: readonly number[], periodS: number): { mark: number; after: number }[] =>
  starts.map((start) => {
    const mark = Math.floor(start / periodS);
    return { mark, after: start - mark * periodS };
  });

/** A timestamp as `systemctl show --timestamp=us+utc` prints it ("Tue 2026-12-01 23:40:15.123456 UTC"), in seconds since the epoch. */
export function parseShownTime(text: string): number | undefined {
  const match = /(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(\.\d+)? UTC/.exec(text);
  return match ? Date.parse(`${match[1]}T${match[2]}Z`) / 1000 + Number(match[3] ?? 0) : undefined;
}

/** A span as `systemctl show` prints it ("1s", "250ms", "1min 30s"), in seconds. */
export function parseShownSpan(text: string): number | undefined {
  const units: Record<string, number> = { us: 1e-6, ms: 1e-3, s: 1, min: 60, h: 3600 };
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(us|ms|s|min|h)/g)];
  return parts.length === 0 ? undefined : parts.reduce((sum, [, n, unit]) => sum + Number(n) * units[unit!]!, 0);
}
