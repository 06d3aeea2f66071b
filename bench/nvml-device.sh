#!/usr/bin/env bash
# The NVML source on a GPU host, in one go (run as root from the checkout, dist/ built, node on PATH):
# host facts, a capture of nvidia-smi, both sources side by side at the same moments (idle, bf16
# matmuls, host-to-device copies only), the daemon mode, failures, and the benches. Results in $OUT/nvml/.
set -u
OUT=${OUT:-/tmp/nvml-device-out}
R=$OUT/nvml
mkdir -p "$R/capture"
CLI="node dist/gpu-textfile.js"
log() { echo "== $(date +%T) $*" | tee -a "$R/steps.log"; }

log host
{ nvidia-smi -L; nvidia-smi --version; nproc; uname -a; node --version; ls -la /dev/nvidia*; ldconfig -p | grep nvidia-ml; } > "$R/host.txt" 2>&1
python3 - > "$R/pynvml.txt" 2>&1 <<'PY'
import pynvml as n
for name in ['NVML_GPM_METRIC_SM_UTIL', 'NVML_GPM_METRIC_SM_OCCUPANCY', 'NVML_GPM_METRIC_ANY_TENSOR_UTIL', 'NVML_GPM_METRIC_DRAM_BW_UTIL',
             'NVML_GPM_METRIC_MAX', 'NVML_FI_DEV_MEMORY_TEMP', 'NVML_FI_DEV_POWER_INSTANT', 'NVML_FI_DEV_GET_GPU_RECOVERY_ACTION']:
    print(name, getattr(n, name, 'missing'))
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
print('gpm support', n.nvmlGpmQueryDeviceSupport(h).isSupportedDevice)
for f in ['nvmlDeviceGetPowerUsage', 'nvmlDeviceGetTotalEnergyConsumption', 'nvmlDeviceGetPcieReplayCounter']:
    try: print(f, getattr(n, f)(h))
    except Exception as e: print(f, 'error', e)
try: print('margin', n.nvmlDeviceGetMarginTemperature(h))
except Exception as e: print('margin error', e)
PY

log capture
bench/capture.sh "$R/capture"

# Both sources at the same moment: started together, each a one-shot dry run.
side_by_side() {
  for i in 1 2 3; do
    $CLI collect --dry-run > "$R/$1-smi-$i.prom" 2> "$R/$1-smi-$i.err" &
    $CLI collect --dry-run --source nvml > "$R/$1-nvml-$i.prom" 2> "$R/$1-nvml-$i.err" &
    wait
  done
}
log idle; side_by_side idle
log "load: bf16 matmuls"
python3 bench/load.py 25 saturated > "$R/load-saturated.txt" 2>&1 &
load=$!
sleep 12
side_by_side load
$CLI collect --dry-run --source nvml --gpm-window 500ms > "$R/load-nvml-gpm500.prom" 2>&1
node bench/nvml-calls.mjs --runs 20 > "$R/calls-load.txt" 2>&1
wait $load
log "load: host-to-device copies only"
python3 bench/load.py 20 h2d-pinned > "$R/load-h2d.txt" 2>&1 &
load=$!
sleep 12
side_by_side h2d
wait $load

log daemon
timeout -s TERM 6 $CLI collect --interval 250ms --source nvml --textfile-dir /tmp/tf-nvml --state-dir /tmp/st-nvml --csv-dir /tmp/csv-nvml > "$R/daemon.out" 2>&1
echo "exit $?" >> "$R/daemon.out"; wc -l /tmp/csv-nvml/default.csv >> "$R/daemon.out"; cp /tmp/tf-nvml/nvidia_gpu.prom "$R/daemon-last.prom"

log failures
$CLI collect --dry-run --source nvml --nvml-library /nonexistent/libnvidia-ml.so.1 > "$R/fail-missing.prom" 2> "$R/fail-missing.err"; echo "exit $?" >> "$R/fail-missing.err"
unshare -m sh -c "mount --bind /dev/null /dev/nvidiactl && $CLI collect --dry-run --source nvml > $R/fail-noctl.prom; echo exit \$?" > "$R/fail-noctl.err" 2>&1

log bench
node bench/nvml-calls.mjs --runs 50 > "$R/calls-idle.txt" 2>&1
node bench/nvml.mjs --runs 15 --seconds 15 --warmup 5 > "$R/bench.txt" 2>&1
log done
