#!/usr/bin/env python3
"""Runs several commands in rounds, one run of each per round in turn, so that drift falls on every row
alike; prints JSON: per row, wall ms, CPU ms (user + sys, children included, from wait4() of that run),
peak RSS KiB and exit status of each run. stdin: {"rounds": N, "rows": [{"label", "command", "env"}]}."""
import json, os, subprocess, sys, time

spec = json.load(sys.stdin)
rows = spec['rows']
out = [{'label': r['label'], 'wall': [], 'cpu': [], 'rss_kib': [], 'exit': []} for r in rows]
for _ in range(spec['rounds']):
    for row, result in zip(rows, out):
        start = time.perf_counter()
        child = subprocess.Popen(row['command'], env=row.get('env'), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        result['wall'].append((time.perf_counter() - start) * 1000)
        result['cpu'].append((usage.ru_utime + usage.ru_stime) * 1000)
        result['rss_kib'].append(usage.ru_maxrss)
        result['exit'].append(os.waitstatus_to_exitcode(status))
print(json.dumps(out))
