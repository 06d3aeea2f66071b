import type { ComputeApp } from '../../collection.js';
import { classifyCell } from './cells.js';

// The process name is the only free text, so it goes between fixed cells: uuid and pid are read
// from the left, memory from the right, and whatever lies between is the name.
export const COMPUTE_APPS_ARGS = ['--query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory', '--format=csv,noheader,nounits'];

const RECORD_START = /^(?:GPU|MIG)-[0-9a-fA-F-]+, \d+, /;
const RECORD = /^((?:GPU|MIG)-[0-9a-fA-F-]+), (\d+), ([\s\S]*), ([^,]*)$/;
const MIB = 1024 * 1024;

/** --query-compute-apps output -> processes; rows that still do not fit are skipped and counted. */
export function parseComputeApps(stdout: string): { apps: ComputeApp[]; skipped: number } {
  const records: string[] = [];
  let skipped = 0;
  // Blank lines are kept: inside a record they are part of a process name.
  const lines = stdout
    .replace(/\r?\n$/, '')
    .split('\n')
    .map((line) => line.replace(/\r$/, ''));
  for (const line of stdout.trim() === '' ? [] : lines) {
    if (/^No running (compute )?processes found/i.test(line)) continue;
    if (RECORD_START.test(line)) records.push(line);
    // A newline inside a process name: the line continues the record before it.
    else if (records.length > 0) records[records.length - 1] += `\n${line}`;
    else skipped++;
  }
  const apps: ComputeApp[] = [];
  for (const record of records) {
    const match = RECORD.exec(record);
    const memory = match ? classifyCell(match[4]!) : undefined;
    if (!match || !memory || memory.kind === 'error' || (memory.kind === 'value' && !/^\d+$/.test(memory.text))) {
      skipped++;
      continue;
    }
    apps.push({
      uuid: match[1]!,
      pid: Number(match[2]),
      name: match[3]!,
      ...(memory.kind === 'value' ? { memoryBytes: Number(memory.text) * MIB } : {}),
    });
  }
  return { apps, skipped };
}
