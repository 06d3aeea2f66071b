// The .deb's control file and maintainer scripts and the .rpm's spec, for scripts/package.mjs.
// The maintainer scripts do what debhelper's dh_installsystemd writes into a package built with it
// (Debian's own textfile collectors, prometheus-node-exporter-collectors, are): enable and start the
// timers on first install through deb-systemd-helper / deb-systemd-invoke (which honour a unit the
// admin disabled, and policy-rc.d), restart them on upgrade, stop them on remove, forget them on purge.

/** DEBIAN/control. Depends only on the C and C++ runtime Node.js links to: never on a nodejs package. */
export const debControl = ({ version, arch, installedSize }) =>
  `Package: gpu-textfile
Version: ${version}
Architecture: ${arch}
Maintainer: gpu-textfile <gpu-textfile@users.noreply.github.com>
Installed-Size: ${installedSize}
Depends: libc6 (>= 2.28), libgcc-s1, libstdc++6
Recommends: prometheus-node-exporter
Section: admin
Priority: optional
Homepage: https://github.com/gpu-textfile/gpu-textfile
Description: NVIDIA GPU metrics for node_exporter's textfile collector
 Turns nvidia-smi (or NVML) into Prometheus node_exporter textfile metrics and a
 CSV trail, written atomically, every 15 seconds from a systemd timer; with
 report, pulse, run and doctor. Ships its own Node.js runtime in
 /usr/lib/gpu-textfile/node: no Node.js is needed on the host.
`;

const quoted = (units) => units.map((unit) => `'${unit}'`).join(' ');

/** What the .prom file is called where /etc/default/gpu-textfile says: removed with the timers, or node_exporter serves its last values for ever. */
const REMOVE_PROM = `	prom=$( . /etc/default/gpu-textfile 2>/dev/null; echo "\${GPU_TEXTFILE_TEXTFILE_DIR:-/var/lib/prometheus/node-exporter}/\${GPU_TEXTFILE_FILE_NAME:-nvidia_gpu.prom}" )
	case "$prom" in /*.prom) rm -f "$prom" ;; esac`;

/** postinst, prerm, postrm. */
export const debScripts = (timers, units) => ({
  postinst: `#!/bin/sh
set -e
if [ "$1" = configure ] || [ "$1" = abort-upgrade ] || [ "$1" = abort-deconfigure ] || [ "$1" = abort-remove ]; then
	for unit in ${quoted(timers)}; do
		# Removes only the mask deb-systemd-helper made on package removal.
		deb-systemd-helper unmask "$unit" >/dev/null || true
		# was-enabled is true on a first install: enable; on an upgrade it keeps the admin's choice.
		if deb-systemd-helper --quiet was-enabled "$unit"; then
			deb-systemd-helper enable "$unit" >/dev/null || true
		else
			deb-systemd-helper update-state "$unit" >/dev/null || true
		fi
	done
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
		if [ -n "$2" ]; then action=restart; else action=start; fi
		deb-systemd-invoke $action ${quoted(timers)} >/dev/null || true
		# An upgrade: the daemon an admin chose instead of the timer runs the new program too
		# (try-restart leaves it alone where it is not running, as on every default install).
		if [ -n "$2" ]; then
			deb-systemd-invoke try-restart gpu-textfile-daemon.service >/dev/null || true
		fi
	fi
fi
`,
  prerm: `#!/bin/sh
set -e
if [ -d /run/systemd/system ] && [ "$1" = remove ]; then
	deb-systemd-invoke stop ${quoted(units)} >/dev/null || true
fi
`,
  postrm: `#!/bin/sh
set -e
if [ "$1" = remove ]; then
	if command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper mask ${quoted(timers)} >/dev/null || true
	fi
${REMOVE_PROM}
fi
if [ "$1" = purge ]; then
	if command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper purge ${quoted(timers)} >/dev/null || true
		deb-systemd-helper unmask ${quoted(timers)} >/dev/null || true
	fi
	# The state, the compile cache and the archive timer's last-run stamp (Persistent=) go; the CSV
	# trail (/var/log/gpu-textfile) is data, and stays.
	rm -rf /var/lib/gpu-textfile /var/cache/gpu-textfile
	rm -f /var/lib/systemd/timers/stamp-gpu-textfile.timer /var/lib/systemd/timers/stamp-gpu-textfile-archive.timer
fi
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
`,
});

/**
 * The spec: the staged tree copied as it is. No build, no stripping, no debuginfo: the Node.js binary
 * is the registry's, byte for byte. %config(noreplace) keeps an edited /etc/default/gpu-textfile on
 * upgrade. The scriptlets are what systemd's %systemd_post / _preun / _postun_with_restart macros do
 * (written out: rpmbuild on Debian has no systemd-rpm-macros), and enable on first install as a
 * preset would. $1 is the count of this package installed after the operation.
 */
export const rpmSpec = ({ version, stage, files, timers, units }) =>
  `%global debug_package %{nil}
%global __os_install_post %{nil}
%global __strip /bin/true
%global _build_id_links none
Name: gpu-textfile
Version: ${version}
Release: 1
Summary: NVIDIA GPU metrics for node_exporter's textfile collector
License: MIT
URL: https://github.com/gpu-textfile/gpu-textfile
AutoReqProv: no
Requires: glibc >= 2.28, libstdc++

%description
Turns nvidia-smi (or NVML) into Prometheus node_exporter textfile metrics and a CSV trail, every
15 seconds from a systemd timer. Ships its own Node.js runtime: no Node.js is needed on the host.

%install
cp -a ${stage}/. %{buildroot}/

%post
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || :; fi
if [ $1 -eq 1 ]; then
	systemctl enable ${timers.join(' ')} >/dev/null 2>&1 || :
	if [ -d /run/systemd/system ]; then systemctl start ${timers.join(' ')} >/dev/null 2>&1 || :; fi
fi

%preun
if [ $1 -eq 0 ]; then
	systemctl --no-reload disable --now ${units.join(' ')} >/dev/null 2>&1 || :
${REMOVE_PROM.replace('/var/lib/prometheus/node-exporter', '/var/lib/node_exporter/textfile')}
fi

%postun
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || :; fi
# An upgrade: the timers, and the daemon where an admin runs it instead, restart on the new program.
if [ $1 -ge 1 ] && [ -d /run/systemd/system ]; then systemctl try-restart ${timers.join(' ')} gpu-textfile-daemon.service >/dev/null 2>&1 || :; fi

%files
${files.map((path) => (path === '/etc/default/gpu-textfile' ? `%config(noreplace) ${path}` : path)).join('\n')}
`;
