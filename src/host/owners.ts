// Who owns a process: its uid from /proc/PID/status, named from /etc/passwd. Pure: the readers are
// processes.ts (GPU processes) and reservations.ts (a job's processes).

/** /etc/passwd -> uid -> name. */
export function parsePasswd(text: string): Map<string, string> {
  const users = new Map<string, string>();
  for (const line of text.split('\n')) {
    const [name, , uid] = line.split(':');
    if (name && uid && /^\d+$/.test(uid) && !users.has(uid)) users.set(uid, name);
  }
  return users;
}

/** /proc/PID/status -> real uid ("Uid:\t1000\t1000\t1000\t1000"). */
export const parseStatusUid = (text: string): string | undefined => /^Uid:\s+(\d+)/m.exec(text)?.[1];
