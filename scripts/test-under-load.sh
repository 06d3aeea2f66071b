#!/usr/bin/env bash
# Runs the whole test suite with every core kept busy by a spinning loop beside it: the suite must hold
# on a loaded CI machine (timing assertions, fixed sleeps and tight deadlines show up here first).
# Usage: scripts/test-under-load.sh [vitest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
loops=()
stop() { for pid in "${loops[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap stop EXIT
for _ in $(seq "$(nproc)"); do
  # Nice 0, like the test processes: a fair share of each core, not just idle time.
  sh -c 'while :; do :; done' &
  loops+=("$!")
done
npx tsc --noEmit -p . && npx vitest run "$@"
