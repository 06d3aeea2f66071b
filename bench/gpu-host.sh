#!/usr/bin/env bash
# Everything this project records and measures on a GPU host, in one go; results in $OUT/results.tar.gz.
#   OUT=/tmp/out bash bench/gpu-host.sh        (node on PATH, dist/ built, run as root)
# Steps: collect against the real nvidia-smi (dry run and for real, timed), doctor healthy and in two
# broken mount namespaces, per-field query costs, npm run bench, a capture of this host's nvidia-smi
# outputs, and -lms series under known loads for pulse.
set -u
OUT=${OUT:-/tmp/gpu-host-out}
R=$OUT/results
mkdir -p "$R"/capture "$R"/series
CLI="node dist/gpu-textfile.js"
log() { echo "== $*" | tee -a "$R/steps.log"; }

log "host"; { nvidia-smi -L; nvidia-smi --version; nproc; uname -r; node --version; } > "$R/host.txt" 2>&1

TIMEFORMAT='%R s wall, %U s user, %S s sys'
log "collect --dry-run"; { time $CLI collect --dry-run > "$R/collect-dry-run.prom"; } 2> "$R/collect-dry-run.err"; echo "exit $?" >> "$R/collect-dry-run.err"
log "collect (writes textfile, state, CSV)"
for i in 1 2 3; do { time $CLI collect --textfile-dir /tmp/tf --state-dir /tmp/st --csv-dir /tmp/csv --task device; } 2>> "$R/collect-real.err"; done
cp /tmp/tf/nvidia_gpu.prom "$R/collect-real.prom"; cp /tmp/csv/device.csv "$R/collect-real.csv"; cp /tmp/st/state.json "$R/state.json"
log "collect --interval 250ms for 5 s"; timeout -s TERM 5 $CLI collect --interval 250ms --textfile-dir /tmp/tf2 --state-dir /tmp/st --csv-dir /tmp/csv2 > "$R/interval.out" 2>&1; echo "exit $?" >> "$R/interval.out"; wc -l /tmp/csv2/default.csv >> "$R/interval.out"

log "doctor (healthy)"; $CLI doctor > "$R/doctor-healthy.txt" 2>&1; echo "exit $?" >> "$R/doctor-healthy.txt"; $CLI doctor --json > "$R/doctor-healthy.json" 2>&1
log "doctor with /dev/nvidiactl unusable"
unshare -m sh -c "mount --bind /dev/null /dev/nvidiactl && $CLI doctor; echo exit \$?; $CLI collect --dry-run --no-processes >/dev/null; echo collect-exit \$?" > "$R/doctor-no-ctl.txt" 2>&1
lib=$(readlink -f "$(ldconfig -p | awk '/libnvidia-ml.so.1 /{print $NF; exit}')")
log "doctor with the NVML library ($lib) unreadable"
unshare -m sh -c "mount --bind /dev/null $lib && $CLI doctor; echo exit \$?; $CLI collect --dry-run --no-processes >/dev/null; echo collect-exit \$?" > "$R/doctor-no-nvml.txt" 2>&1

log "capture"
bench/capture.sh "$R/capture"

log "field costs"; node bench/field-costs.mjs --runs 3 --default "$(node -e "console.log(Object.values(require('/tmp/st/state.json').names).join(','))")" > "$R/field-costs.txt" 2>&1
log "bench"; node bench/run.mjs --runs 20 --seconds 20 --json "$R/bench.json" > "$R/bench.txt" 2>&1

log "series"
q=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.max_limit,temperature.gpu,clocks.sm,clocks.max.sm,clocks.mem,clocks_event_reasons.active,pstate
nvidia-smi --query-gpu=$q --format=csv -i 0 -lms 100 > "$R/series/lms100.csv" & p1=$!
nvidia-smi --query-gpu=$q --format=csv -i 0 -lms 200 > "$R/series/lms200.csv" & p2=$!
python3 bench/load.py 10 idle saturated starved-30 starved-60 starved-85 tiny > "$R/series/phases.txt" 2>&1
kill $p1 $p2; wait $p1 $p2 2>/dev/null

log "done"
tar -C "$OUT" -czf "$OUT/results.tar.gz" results && rm -rf "$R"
