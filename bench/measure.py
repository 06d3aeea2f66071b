#!/usr/bin/env python3
"""Runs a command N times; prints JSON: wall seconds, CPU seconds (user+sys, its children included)
and peak RSS (KiB) of each run, read from wait4()'s rusage of that one run, its exit status, and for
a run that failed the last line it wrote on stderr (why).

usage: measure.py RUNS -- COMMAND [ARGS...]"""
import json, os, subprocess, sys, time

runs = int(sys.argv[1])
command = sys.argv[sys.argv.index('--') + 1:]
result = {'wall': [], 'cpu': [], 'maxrss_kib': [], 'exit': [], 'failures': []}
for _ in range(runs):
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # Read to the end before waiting (a full pipe would stall the run); what is kept is bounded.
    err = child.stderr.read()[-4096:].decode(errors='replace').strip().splitlines()
    _, status, usage = os.wait4(child.pid, 0)
    result['wall'].append(time.perf_counter() - start)
    result['cpu'].append(usage.ru_utime + usage.ru_stime)
    result['maxrss_kib'].append(usage.ru_maxrss)
    result['exit'].append(os.waitstatus_to_exitcode(status))
    if result['exit'][-1] != 0:
        result['failures'].append(err[-1] if err else '')
print(json.dumps(result))
