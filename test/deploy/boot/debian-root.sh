#!/usr/bin/env bash
# Prints the path of a minimal Debian root for the boot tests (test/deploy/*-boot.test.ts): systemd,
# cron and Debian's node_exporter, nothing else; or, given a suite and a package list (`debian-root.sh
# trixie lintian`), that suite with those (test/packaging/lintian.test.ts runs Debian 13's lintian in
# one). Built once per suite and package list with mmdebstrap and kept
# machine-wide in /var/cache/gpu-textfile-test, outside any checkout, so every later run and every
# worktree on this machine reuses it. Tests never write into it: each boots an overlay of it.
set -euo pipefail

suite=${1:-bookworm}
packages=${2:-systemd,systemd-sysv,dbus,libstdc++6,prometheus-node-exporter,cron}
cache=/var/cache/gpu-textfile-test
# The name says what is inside: another package list is another root, built beside this one.
key=$(printf '%s\n' "$suite" minbase "$packages" | sha256sum | cut -c1-16)
root="$cache/debian-root-$key"

mkdir -p "$cache"
exec 9>"$cache/.lock"
# Two test files may start at once on a fresh machine: the second waits for the first's build.
flock -w 1800 9
if [ ! -d "$root" ]; then
  # Left by a build that was killed; nobody else builds while we hold the lock.
  rm -rf "$cache"/.building.*
  tmp=$(mktemp -d "$cache/.building.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  mmdebstrap --quiet --variant=minbase --include="$packages" "$suite" "$tmp/root" >&2
  # Renamed only when complete: a root in the cache is always a whole one.
  mv "$tmp/root" "$root"
fi
echo "$root"
