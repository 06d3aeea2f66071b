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

/** The program's default for the name the scripts read from /etc/default/gpu-textfile. */
const DEFAULT_FILE_NAME = 'nvidia_gpu.prom';
/**
 * The --compat names (src/compat/compat-file.ts's COMPAT_NAMES; test/packaging/package-meta.test.ts
 * holds the two equal): each writes <name>_<compat>.prom, which a remove must take away too.
 */
export const COMPAT_FILE_SUFFIXES = ['dcgm', 'dcgm-4.8.3', 'dcgm-4.9', 'dcgm-4.10', 'nvidia_gpu_exporter'];

/**
 * sh that prints one setting of /etc/default/gpu-textfile as systemd's EnvironmentFile= reads a plain
 * assignment (NAME=value, "value" or 'value', the last one wins), or the default given: read with
 * sed, never sourced, so a file that is gone or is not valid sh (systemd passes over a line it
 * cannot read; sh stops at it) reads as its defaults instead of stopping a maintainer script half-way.
 * Only an absolute path or a plain name (the characters a unit takes unquoted) is taken.
 */
const SETTING = `setting() {
	value=$(sed -n "s/^[[:space:]]*\\(export[[:space:]][[:space:]]*\\)\\{0,1\\}$1=//p" /etc/default/gpu-textfile 2>/dev/null | tail -n 1)
	value=\${value%"\${value##*[![:space:]]}"}
	case "$value" in
		\\"*\\") value=\${value#\\"}; value=\${value%\\"} ;;
		\\'*\\') value=\${value#\\'}; value=\${value%\\'} ;;
	esac
	case "$value" in
		*[!A-Za-z0-9_@+=:,./-]*) value= ;;
	esac
	printf '%s\\n' "\${value:-$2}"
}`;

/**
 * sh that removes our .prom files (the metrics and the --compat peers' files): in the directory the
 * file names and in the package's default one, under the name it names. Left there, node_exporter
 * would serve their last values for ever. Never fails: a remove must not stop half-way for them.
 */
const removeProms = (defaultDir) => `${SETTING}
	name=$(setting GPU_TEXTFILE_FILE_NAME ${DEFAULT_FILE_NAME})
	case "$name" in */*|.*) name=${DEFAULT_FILE_NAME} ;; ?*.prom) ;; *) name=${DEFAULT_FILE_NAME} ;; esac
	for dir in "$(setting GPU_TEXTFILE_TEXTFILE_DIR ${defaultDir})" ${defaultDir}; do
		case "$dir" in /*) ;; *) continue ;; esac
		for file in "$name"${COMPAT_FILE_SUFFIXES.map((suffix) => ` "\${name%.prom}_${suffix}.prom"`).join('')}; do
			rm -f "$dir/$file" || true
		done
	done`;

/**
 * The systemd generator (systemd.generator(7)), /usr/lib/systemd/system-generators/gpu-textfile: the
 * services' ProtectSystem=strict leaves writable only the directories in their ReadWritePaths=, which
 * the package's units fix at build time. At boot and at every daemon-reload this writes a drop-in per
 * service from the directories /etc/default/gpu-textfile names (GPU_TEXTFILE_TEXTFILE_DIR,
 * GPU_TEXTFILE_CSV_DIR): ReadWritePaths= reset to exactly those, and an ExecStartPre= that creates
 * them first, as root outside the sandbox ("+"): a directory nothing else created (no node_exporter
 * package, a new path in the file) is there before the sandboxed run starts.
 */
export const generator = ({ textfileDir, csvDir }) => `#!/bin/sh
# gpu-textfile's systemd generator: the directories /etc/default/gpu-textfile names, made writable
# (ReadWritePaths=) and created (ExecStartPre=) for the services, whose ProtectSystem=strict keeps the
# rest read-only. Runs at boot and at each daemon-reload, which gpu-textfile-config.path asks for
# whenever the file changes. Written by scripts/package.mjs; see /usr/lib/gpu-textfile/docs/deployment.md.
set -u
out=\${1:-/run/systemd/generator}
${SETTING.replace(/value= ;;/, 'echo "gpu-textfile-generator: $1 in /etc/default/gpu-textfile holds a character a unit cannot take unquoted; using $2" >&2; value= ;;')}
textfile=$(setting GPU_TEXTFILE_TEXTFILE_DIR ${textfileDir})
# No CSV_DIR (or an empty one): no trail; the package's file names ${csvDir}.
csv=$(setting GPU_TEXTFILE_CSV_DIR '')
case "$textfile" in /*) ;; *) textfile=${textfileDir} ;; esac
case "$csv" in /*|'') ;; *) csv= ;; esac
dropin() {
	unit=$1
	shift
	mkdir -p "$out/$unit.d"
	{
		echo "# Written by $0 from /etc/default/gpu-textfile."
		echo '[Service]'
		echo 'ReadWritePaths='
		if [ $# -gt 0 ]; then
			printf 'ReadWritePaths=-%s\\n' "$@"
			printf 'ExecStartPre=+/bin/mkdir -p -m 0755 %s\\n' "$*"
		fi
	} >"$out/$unit.d/50-directories.conf"
}
dropin gpu-textfile.service "$textfile" \${csv:+"$csv"}
dropin gpu-textfile-daemon.service "$textfile" \${csv:+"$csv"}
dropin gpu-textfile-archive.service \${csv:+"$csv"}
`;

/** The units only the packages have: a change to /etc/default/gpu-textfile reloads systemd, so the generator runs. */
export const configUnits = (documentation) => ({
  'gpu-textfile-config.path': `# Watches /etc/default/gpu-textfile: when it is written, created or removed, gpu-textfile-config.service
# reloads systemd, whose generator gives the services the directories the file now names, by their next run.
[Unit]
Description=Watch /etc/default/gpu-textfile for gpu-textfile's directories
Documentation=${documentation}

[Path]
PathChanged=/etc/default/gpu-textfile

[Install]
WantedBy=paths.target
`,
  'gpu-textfile-config.service': `# Started by gpu-textfile-config.path when /etc/default/gpu-textfile changes.
[Unit]
Description=Apply /etc/default/gpu-textfile's directories to gpu-textfile's units (daemon-reload)
Documentation=${documentation}

[Service]
Type=oneshot
SyslogIdentifier=gpu-textfile
# The generator reads the file again and rewrites the services' ReadWritePaths=.
ExecStart=/bin/systemctl daemon-reload
# The daemon mode reads its options once, at start: one that is running starts again on the new file.
ExecStart=/bin/systemctl --no-block try-restart gpu-textfile-daemon.service
# It only talks to systemd over its private socket (as root): nothing else is needed.
CapabilityBoundingSet=
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateNetwork=yes
`,
});

/** postinst, prerm, postrm. `started`: the units enabled and started (the timers, the config watcher). */
export const debScripts = (started, units, textfileDir) => ({
  postinst: `#!/bin/sh
set -e
if [ "$1" = configure ] || [ "$1" = abort-upgrade ] || [ "$1" = abort-deconfigure ] || [ "$1" = abort-remove ]; then
	for unit in ${quoted(started)}; do
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
		deb-systemd-invoke $action ${quoted(started)} >/dev/null || true
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
		deb-systemd-helper mask ${quoted(started)} >/dev/null || true
	fi
	${removeProms(textfileDir)}
fi
if [ "$1" = purge ]; then
	if command -v deb-systemd-helper >/dev/null; then
		deb-systemd-helper purge ${quoted(started)} >/dev/null || true
		deb-systemd-helper unmask ${quoted(started)} >/dev/null || true
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
 * upgrade (a changed default lands beside it as .rpmnew). The scriptlets are what systemd's
 * %systemd_post / _preun / _postun_with_restart macros do (written out: rpmbuild on Debian has no
 * systemd-rpm-macros), and enable on first install as a preset would. $1 is the count of this
 * package installed after the operation. rpmlint's one error left is no-signature (docs/development.md).
 */
export const rpmSpec = ({ version, stage, files, dirs, started, units, textfileDir }) =>
  `%global debug_package %{nil}
%global __os_install_post %{nil}
%global __strip /bin/true
%global _build_id_links none
Name: gpu-textfile
Version: ${version}
Release: 1
Summary: NVIDIA GPU metrics for node_exporter's textfile collector
License: MIT
Group: Applications/System
Packager: gpu-textfile <gpu-textfile@users.noreply.github.com>
URL: https://github.com/gpu-textfile/gpu-textfile
AutoReqProv: no
# What Node.js links to, by soname (rpmlint's explicit-lib-dependency: not by package name).
Requires: libc.so.6(GLIBC_2.28)(64bit), libstdc++.so.6()(64bit), libgcc_s.so.1()(64bit)

%description
Turns nvidia-smi (or NVML) into Prometheus node_exporter textfile metrics and a
CSV trail, every 15 seconds from a systemd timer. Ships its own Node.js
runtime: no Node.js is needed on the host.

%install
cp -a ${stage}/. %{buildroot}/

%post
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || :; fi
if [ $1 -eq 1 ]; then
	systemctl enable ${started.join(' ')} >/dev/null 2>&1 || :
	if [ -d /run/systemd/system ]; then systemctl start ${started.join(' ')} >/dev/null 2>&1 || :; fi
fi

%preun
if [ $1 -eq 0 ]; then
	systemctl --no-reload disable --now ${units.join(' ')} >/dev/null 2>&1 || :
	${removeProms(textfileDir).replace(/%/g, '%%')}
fi

%postun
if [ -d /run/systemd/system ]; then systemctl daemon-reload >/dev/null 2>&1 || :; fi
# An upgrade: the timers, and the daemon where an admin runs it instead, restart on the new program.
if [ $1 -ge 1 ] && [ -d /run/systemd/system ]; then systemctl try-restart ${started.filter((unit) => unit.endsWith('.timer')).join(' ')} gpu-textfile-daemon.service >/dev/null 2>&1 || :; fi

%files
${files.map((path) => (path === '/etc/default/gpu-textfile' ? `%config(noreplace) ${path}` : path)).join('\n')}
${dirs.map((path) => `%dir ${path}`).join('\n')}

%changelog
* Tue Dec 01 2026 gpu-textfile <gpu-textfile@users.noreply.github.com> - ${version}-1
- Packaged by scripts/package.mjs.
`;
