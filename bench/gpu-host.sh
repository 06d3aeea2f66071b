#!/usr/bin/env bash
# The one GPU-host driver: measures and records on a GPU host in one go, with the packaged program's
# own Node.js (such hosts have none); results in $OUT/gpu-host/ (BENCHMARKS.md's GPU sections).
#   OUT=/tmp/out [BASE_DIST=DIR] bash bench/gpu-host.sh PACKAGE.tar.gz [--record]
# PACKAGE: this CPU's tarball of `npm run package -- --snapshot` (a checkout's dist/ is not needed: the
# package's is linked in where there is none). Run as root from the checkout, without NODE_EXTRA_CA_CERTS
# (a unit does not have it). Steps: host facts; `npm run bench`'s steps that need a GPU and the one-shot
# table (bench/bench.mjs); with --record also doctor healthy and with /dev/nvidiactl or NVML unusable,
# and a capture of this host's nvidia-smi (bench/capture.sh, test/fixtures/captures/ layout).
# BASE_DIST: another revision's dist/ (`npm run build` there), timed beside this package in the one-shot table.
set -u
tarball=$1
OUT=${OUT:-/tmp/gpu-host-out}
R=$OUT/gpu-host
mkdir -p "$R" /tmp/gpu-host-program
unset NODE_EXTRA_CA_CERTS NODE_COMPILE_CACHE
log() { echo "== $(date +%T) $*" | tee -a "$R/steps.log"; }

tar -xzf "$tarball" -C /tmp/gpu-host-program
P=$(ls -d /tmp/gpu-host-program/gpu-textfile-*-linux-*/ | head -1)
P=${P%/}
export PATH="$P/node/bin:$PATH"
[ -e dist ] || ln -s "$P/dist" dist
CLI="$P/bin/gpu-textfile"

log host
{ nvidia-smi -L; nvidia-smi --version; nproc; uname -r; node --version; uptime; } > "$R/host.txt" 2>&1

log "bench: the one-shot table, then the GPU steps"
node bench/bench.mjs --only one-shot -- --program "$P" ${BASE_DIST:+--base-dist "$BASE_DIST"} --json "$R/one-shot.json" 2>&1 | tee "$R/one-shot.md"
node bench/bench.mjs --only sample --only nvml --only nvml-calls > "$R/bench.txt" 2>&1

if [ "${2:-}" = --record ]; then
  log "doctor (healthy)"; $CLI doctor > "$R/doctor-healthy.txt" 2>&1; echo "exit $?" >> "$R/doctor-healthy.txt"
  log "doctor with /dev/nvidiactl unusable"
  unshare -m sh -c "mount --bind /dev/null /dev/nvidiactl && $CLI doctor; echo exit \$?" > "$R/doctor-no-ctl.txt" 2>&1
  lib=$(readlink -f "$(ldconfig -p | awk '/libnvidia-ml.so.1 /{print $NF; exit}')")
  log "doctor with the NVML library ($lib) unreadable"
  unshare -m sh -c "mount --bind /dev/null $lib && $CLI doctor; echo exit \$?" > "$R/doctor-no-nvml.txt" 2>&1
  log capture; mkdir -p "$R/capture"; bash bench/capture.sh "$R/capture"
fi
log done
