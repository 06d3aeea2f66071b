#!/usr/bin/env bash
# Records this host's nvidia-smi as a capture folder (the layout test/fixtures/captures/ uses):
# every field this driver answers, the field help, the compute processes, the GPU list.
#   bench/capture.sh DIR
set -u
dir=$1
mkdir -p "$dir"
fields=$(nvidia-smi --help-query-gpu | grep -o '^"[A-Za-z_][A-Za-z0-9_.]*"' | tr -d '"' | paste -sd,)
valid=$(for f in ${fields//,/ }; do nvidia-smi --query-gpu="$f" --format=csv,noheader >/dev/null 2>&1 && echo "$f"; done | paste -sd,)
nvidia-smi --query-gpu="$valid" --format=csv > "$dir/query-gpu.csv" 2>&1
nvidia-smi --help-query-gpu > "$dir/help-query-gpu.txt"
nvidia-smi --query-compute-apps=timestamp,gpu_name,gpu_bus_id,gpu_serial,gpu_uuid,pid,process_name,used_gpu_memory --format=csv > "$dir/query-compute-apps.csv" 2>&1
nvidia-smi -L > "$dir/L.txt"
