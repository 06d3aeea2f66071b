#!/usr/bin/env bash
# Installs the real components the test suite runs against, on Debian or Ubuntu:
# promtool (package prometheus), node_exporter, logrotate, systemd-analyze, Chromium (the HTML report),
# mmdebstrap and systemd-nspawn (the boot tests build a minimal Debian and boot the units in it), and
# rpm, rpmlint, lintian and binutils for both CPUs (npm run package and its tests); python3 and
# util-linux for the stuck nvidia-smi's FUSE stand-in; VictoriaMetrics and Ansible for the fleet's tests.
# Installs only what is missing; needs root (or sudo) when something is.
set -euo pipefail

missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v prometheus-node-exporter >/dev/null || command -v node_exporter >/dev/null || missing+=(prometheus-node-exporter)
command -v logrotate >/dev/null || [ -x /usr/sbin/logrotate ] || missing+=(logrotate)
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v chromium >/dev/null || missing+=(chromium)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v systemd-nspawn >/dev/null || missing+=(systemd-container)
# npm run package and its tests (test/packaging/dist.test.ts): the .rpm, lintian on the .deb, and
# strip for both CPUs' Node.js.
command -v rpmbuild >/dev/null || missing+=(rpm)
command -v lintian >/dev/null || missing+=(lintian)
command -v rpmlint >/dev/null || missing+=(rpmlint)
command -v x86_64-linux-gnu-strip >/dev/null || missing+=(binutils-x86-64-linux-gnu)
command -v aarch64-linux-gnu-strip >/dev/null || missing+=(binutils-aarch64-linux-gnu)
# export's round trip into a second store (test/export/stores.test.ts), and the fleet playbook's check
# (examples/ansible/, test/deploy/ansible-boot.test.ts).
command -v victoria-metrics >/dev/null || missing+=(victoria-metrics)
command -v ansible-playbook >/dev/null || missing+=(ansible)
# The nvidia-smi stuck in the driver (test/support/stuck-in-driver.ts): a FUSE server in python3,
# mounted with mount(2) in a mount namespace of its own (unshare, nsenter: util-linux). No libfuse
# or fusermount; it needs root and /dev/fuse (the fuse module, in every Debian kernel).
command -v python3 >/dev/null || missing+=(python3)
command -v unshare >/dev/null && command -v nsenter >/dev/null || missing+=(util-linux)

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup-test-host: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  # The Debian packages start services where systemd runs; the tests start their own on free ports.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
