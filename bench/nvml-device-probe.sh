#!/usr/bin/env bash
# The lean NVML recorder (once the fallback of bench/nvml-device.sh, retired in issue 41) for a GPU host that gets only the main checkout: the nvidia-smi
# source from that checkout's dist/ (unchanged by the NVML work), the NVML source from nvml-probe.mjs
# (bench/nvml-probe.ts bundled) beside this script, koffi from node_modules. Results in $OUT/nvml/.
set -u
P=$(dirname "$0"); R=$OUT/nvml; mkdir -p "$R"; K=$PWD/node_modules/@koromix/koffi-linux-x64
probe() { node "$P/nvml-probe.mjs" "$1" "$K" "${@:2}"; }
log() { echo "== $(date +%T) $*" >> "$R/steps.log"; }
log host; { nvidia-smi -L; nvidia-smi --version; nproc; uname -r; node --version; } > "$R/host.txt" 2>&1
python3 -c "
import pynvml as n
for k in ['NVML_GPM_METRIC_SM_UTIL','NVML_GPM_METRIC_SM_OCCUPANCY','NVML_GPM_METRIC_ANY_TENSOR_UTIL','NVML_GPM_METRIC_DRAM_BW_UTIL','NVML_FI_DEV_MEMORY_TEMP','NVML_FI_DEV_POWER_INSTANT','NVML_FI_DEV_GET_GPU_RECOVERY_ACTION']: print(k, getattr(n,k,'missing'))
" > "$R/pynvml.txt" 2>&1
[ -n "${SKIP_CAPTURE:-}" ] || { log capture
f=$(nvidia-smi --help-query-gpu | grep -o '^"[A-Za-z_][A-Za-z0-9_.]*"' | tr -d '"')
v=$(for x in $f; do nvidia-smi --query-gpu="$x" --format=csv,noheader >/dev/null 2>&1 && echo "$x"; done | paste -sd,)
nvidia-smi --query-gpu="$v" --format=csv > "$R/query-gpu.csv" 2>&1; nvidia-smi --help-query-gpu > "$R/help-query-gpu.txt"; }
pair() { for i in 1 2; do node dist/gpu-textfile.js collect --dry-run > "$R/$1-smi-$i.prom" 2>&1 & probe oneshot 100 > "$R/$1-nvml-$i.prom" 2>&1 & wait; done; }
log idle; pair idle
log saturated; python3 bench/load.py 30 saturated > "$R/load1.txt" 2>&1 & L=$!; sleep 12; pair load
nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory --format=csv > "$R/load-apps.csv" 2>&1
probe calls 20 > "$R/calls-load.txt" 2>&1; probe daemon 8 > "$R/daemon-load.txt" 2>&1; wait $L
log h2d; python3 bench/load.py 20 h2d-pinned > "$R/load2.txt" 2>&1 & L=$!; sleep 12; pair h2d; wait $L
log bench
probe calls 50 > "$R/calls-idle.txt" 2>&1
probe daemon 10 > "$R/daemon-idle.txt" 2>&1; probe daemon 10 no-gpm > "$R/daemon-idle-nogpm.txt" 2>&1
for c in "node -e 0" "node dist/gpu-textfile.js collect --dry-run" "node $P/nvml-probe.mjs oneshot $K 100 no-gpm" "node $P/nvml-probe.mjs oneshot $K 100" "node $P/nvml-probe.mjs oneshot $K 10"; do
  echo "$c $(python3 bench/measure.py 10 -- $c)" >> "$R/oneshot.txt"; done
log done
