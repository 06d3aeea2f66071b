#!/usr/bin/env bash
# pulse's recordings on a GPU host: nvidia-smi -lms 100, 200 and 500 at once, on GPU 0, while
# bench/load.py runs its phases; results in $OUT/series.tar.gz (lms{100,200,500}.csv, phases.txt, host.txt).
# Cut into test/fixtures/series/ with bench/cut-series.mjs.
#   OUT=/tmp/out bash bench/pulse-series.sh SECONDS phase [phase...]
set -u
OUT=${OUT:-/tmp/pulse-series-out}
S=$OUT/series
mkdir -p "$S"
{ nvidia-smi -L; nvidia-smi --version; date +%z; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())'; } > "$S/host.txt" 2>&1
cat "$S/host.txt"
# The columns bench/gpu-host.sh records (a superset of pulse's own), so every fixture reads alike.
q=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.max_limit,temperature.gpu,clocks.sm,clocks.max.sm,clocks.mem,clocks_event_reasons.active,pstate
pids=()
for ms in 100 200 500; do
  nvidia-smi --query-gpu=$q --format=csv -i 0 -lms $ms > "$S/lms$ms.csv" & pids+=($!)
done
PYTHONUNBUFFERED=1 python3 bench/load.py --rest 2 "$@" 2>&1 | tee "$S/phases.txt"
kill "${pids[@]}"; wait "${pids[@]}" 2>/dev/null
tar -C "$OUT" -czf "$OUT/series.tar.gz" series && rm -rf "$S"
