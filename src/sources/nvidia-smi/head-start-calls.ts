import { type StartedCall, dropCall, startCall } from './call.js';
import type { HeadStart, HeadStartRecord } from './head-start.js';
import { guardPool } from './orphan-guard.js';

/** Starts the record's calls, guarded by one guard, each bounded by the record's timeout until taken. */
export function startRecordedCalls(file: string, record: HeadStartRecord): HeadStart {
  const guards = guardPool();
  const waiting: StartedCall[] = [];
  for (const args of record.calls) {
    const started = startCall(record.command, args, { guards });
    // Not startable now: the run starts it itself and says why.
    if (!('error' in started)) waiting.push(started);
  }
  const drop = (call: StartedCall) => {
    const at = waiting.indexOf(call);
    if (at < 0) return;
    waiting.splice(at, 1);
    dropCall(call);
  };
  for (const call of waiting) setTimeout(() => drop(call), record.timeoutMs).unref();
  return {
    file,
    take: (command, args) => {
      const call = waiting.find((each) => each.command === command && sameWords(each.args, args));
      if (call) waiting.splice(waiting.indexOf(call), 1);
      return call;
    },
    drop: () => {
      for (const call of [...waiting]) drop(call);
    },
  };
}

const sameWords = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((word, i) => word === b[i]);
