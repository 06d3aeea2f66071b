#!/usr/bin/env bash
# The baseline a shell-script exporter would be: one nvidia-smi call for the same fields, a heredoc,
# mv. No unit conversion, no escaping, no failure handling.
# Usage: plain-collector.sh NVIDIA_SMI QUERY_FIELDS OUT_DIR
set -euo pipefail
smi=$1
fields=$2
out=$3
rows=$("$smi" --query-gpu="$fields" --format=csv,noheader,nounits)
cat >"$out/plain.prom.tmp" <<METRICS
# TYPE nvidia_smi_value untyped
$(awk -F', ' -v fields="$fields" 'BEGIN { n = split(fields, f, ",") } { for (i = 1; i <= n; i++) printf "nvidia_smi_value{gpu=\"%s\",field=\"%s\"} %s\n", $1, f[i], $i }' <<<"$rows")
METRICS
mv "$out/plain.prom.tmp" "$out/plain.prom"
