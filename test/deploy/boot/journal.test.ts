import { describe, expect, it } from 'vitest';
import { calendarMarks, parseJournal, parseShownSpan, parseShownTime, runsOf } from './journal.js';

// The first two entries are copied from the booted Debian's `journalctl -o json` (fields the parser does
// not read left out); the others are written the same way: a failed run, a run still going, and a
// MESSAGE that journald gives as bytes.
const recorded = [
  '{"__REALTIME_TIMESTAMP":"1796125559123813","INVOCATION_ID":"869f1e0d3c6b4dea9166ef98a01d84d7","SYSLOG_IDENTIFIER":"systemd","PRIORITY":"6","MESSAGE_ID":"7d4958e842da4a758f6c1cdc7b36dcc5","UNIT":"gpu-textfile.service","JOB_TYPE":"start","MESSAGE":"Starting gpu-textfile.service - Publish NVIDIA GPU metrics for node_exporter (gpu-textfile collect)..."}',
  '{"__REALTIME_TIMESTAMP":"1796125559769746","INVOCATION_ID":"869f1e0d3c6b4dea9166ef98a01d84d7","SYSLOG_IDENTIFIER":"systemd","PRIORITY":"6","MESSAGE_ID":"7ad2d189f7e94e70a38c781354912448","UNIT":"gpu-textfile.service","MESSAGE":"gpu-textfile.service: Deactivated successfully."}',
  '{"__REALTIME_TIMESTAMP":"1796125574343800","INVOCATION_ID":"2b0e6a1c9f1d4e0c8d3b5a7f6e4c2d1a","SYSLOG_IDENTIFIER":"systemd","PRIORITY":"6","MESSAGE_ID":"7d4958e842da4a758f6c1cdc7b36dcc5","UNIT":"gpu-textfile.service","JOB_TYPE":"start","MESSAGE":"Starting gpu-textfile.service - Publish NVIDIA GPU metrics for node_exporter (gpu-textfile collect)..."}',
  '{"__REALTIME_TIMESTAMP":"1796125574900000","SYSLOG_IDENTIFIER":"node","PRIORITY":"3","MESSAGE":[103,112,117]}',
  '{"__REALTIME_TIMESTAMP":"1796125575392700","INVOCATION_ID":"2b0e6a1c9f1d4e0c8d3b5a7f6e4c2d1a","SYSLOG_IDENTIFIER":"systemd","PRIORITY":"3","MESSAGE_ID":"d9b373ed55a64feb8242e02dbe79a49c","UNIT":"gpu-textfile.service","MESSAGE":"gpu-textfile.service: Failed with result \'exit-code\'."}',
  '{"__REALTIME_TIMESTAMP":"1796125590289700","INVOCATION_ID":"5c1f0e2d3b4a4c6d8e9f0a1b2c3d4e5f","SYSLOG_IDENTIFIER":"systemd","PRIORITY":"6","MESSAGE_ID":"7d4958e842da4a758f6c1cdc7b36dcc5","UNIT":"gpu-textfile.service","JOB_TYPE":"start","MESSAGE":"Starting gpu-textfile.service - Publish NVIDIA GPU metrics for node_exporter (gpu-textfile collect)..."}',
].join('\n');

describe('journal entries', () => {
  it('parses times, identifiers, priorities and a MESSAGE given as bytes', () => {
    const entries = parseJournal(`${recorded}\n`);
    expect(entries).toHaveLength(6);
    expect(entries[0]).toMatchObject({ time: 1796125559.123813, identifier: 'systemd', priority: 6, unit: 'gpu-textfile.service' });
    expect(entries[3]).toMatchObject({ message: 'gpu', identifier: 'node', priority: 3, unit: undefined });
  });

  it('pairs each start with its result by invocation; a run still going has none', () => {
    const runs = runsOf(parseJournal(recorded), 'gpu-textfile.service');
    expect(runs.map((run) => [run.start, run.result?.ok])).toEqual([
      [1796125559.123813, true],
      [1796125574.3438, false],
      [1796125590.2897, undefined],
    ]);
    expect(runsOf(parseJournal(recorded), 'gpu-textfile-daemon.service')).toEqual([]);
  });
});

describe('calendarMarks', () => {
  it('puts each start on its quarter minute, and says how long after it came', () => {
    const marks = calendarMarks([1796126400.31, 1796126415.31, 1796126431.4, 1796126445.0], 15);
    expect(marks.map((m) => m.mark - marks[0]!.mark)).toEqual([0, 1, 2, 3]);
    expect(marks.map((m) => Number(m.after.toFixed(2)))).toEqual([0.31, 0.31, 1.4, 0]);
  });
  it('a timer counting from each run (16 s apart) comes a second later after its mark each time', () => {
    const marks = calendarMarks([1796126209.799807, 1796126225.800085, 1796126241.799543, 1796126257.787947], 15);
    expect(marks.map((m) => m.mark - marks[0]!.mark)).toEqual([0, 1, 2, 3]);
    expect(marks.map((m) => Math.round(m.after))).toEqual([5, 6, 7, 8]);
  });
});

describe("systemctl show's timestamps and spans", () => {
  it.each([
    ['Tue 2026-12-01 23:40:15.123456 UTC', 1796168415.123456],
    ['Tue 2026-12-01 23:40:15 UTC', 1796168415],
    ['n/a', undefined],
  ])('%s', (text, expected) => expect(parseShownTime(text)).toBe(expected));
  it.each([
    ['1s', 1],
    ['250ms', 0.25],
    ['1min 30s', 90],
    ['', undefined],
  ])('%s', (text, expected) => expect(parseShownSpan(text)).toBe(expected));
});
