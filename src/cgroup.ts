// Who a process runs for, read from its control group: /proc/PID/cgroup names the cgroup of every
// hierarchy the process is in, and container runtimes, the kubelet, systemd and Slurm each name
// their cgroups in a documented way. Pure: the reader is src/processes.ts.

/** The labels attribution adds to a process's series, in the order they are written. */
export const ATTRIBUTION_LABELS = ['container_id', 'pod_uid', 'systemd_unit', 'slurm_job'] as const;

export type AttributionLabel = (typeof ATTRIBUTION_LABELS)[number];

/** What a process's cgroup says about it; a label the path does not show is absent. */
export type Attribution = Partial<Record<AttributionLabel, string>>;

interface Pattern {
  label: AttributionLabel;
  /** Who names cgroups this way, for the reader of the table. */
  by: string;
  /** Matched against one cgroup path; group 1 is the value. */
  regex: RegExp;
  /** The value as it is printed elsewhere (the kubelet's uid with dashes). */
  value?: (match: string) => string;
}

// A container id is the runtime's 64-hex id; a shorter run of hex is accepted where the name
// itself says "container" (crio-, cri-containerd-, libpod-), never as a bare path segment.
const HEX64 = '[0-9a-f]{64}';
const HEX = '[0-9a-f]{12,64}';
// A pod uid: the API server's UUID, or a static pod's 32-hex hash; the systemd driver writes '_' for '-'.
const POD_UID = '[0-9a-f]{8}(?:[-_][0-9a-f]{4}){3}[-_][0-9a-f]{12}|[0-9a-f]{32}';

/**
 * Every way of naming a cgroup that attribution knows, first match per label wins. Sources:
 * Docker's cgroup drivers (docs.docker.com/engine/containers/runmetrics/: `/docker/<id>` with
 * cgroupfs, `system.slice/docker-<id>.scope` with systemd); the kubelet's cgroup drivers
 * (kubernetes.io/docs/concepts/architecture/cgroups/, pkg/kubelet/cm/cgroup_manager_linux.go:
 * `kubepods-<qos>-pod<uid>.slice` with systemd, `/kubepods/<qos>/pod<uid>/<container id>` with
 * cgroupfs); containerd's CRI plugin (`cri-containerd-<id>.scope`), CRI-O (`crio-<id>.scope`, its
 * `crio-conmon-<id>.scope` being the monitor, not the container), Podman (`libpod-<id>.scope`,
 * `libpod-conmon-…` likewise); systemd's unit names (systemd.unit(5): `.service`, `.scope`,
 * `run-r<hex>.scope` from systemd-run --scope); Slurm's cgroup plugins (slurm.schedmd.com/cgroups.html:
 * `/slurm/uid_<uid>/job_<id>/step_<id>` with cgroup/v1, `slurmstepd.scope/job_<id>/step_<id>` with v2).
 */
const PATTERNS: readonly Pattern[] = [
  { label: 'container_id', by: 'Docker, systemd driver', regex: new RegExp(`/docker-(${HEX64})\\.scope(?:/|$)`) },
  { label: 'container_id', by: 'Docker, cgroupfs driver', regex: new RegExp(`/docker/(${HEX64})(?:/|$)`) },
  { label: 'container_id', by: 'containerd CRI, systemd driver', regex: new RegExp(`/cri-containerd-(${HEX})\\.scope(?:/|$)`) },
  { label: 'container_id', by: 'CRI-O, systemd driver', regex: new RegExp(`/crio-(${HEX})\\.scope(?:/|$)`) },
  { label: 'container_id', by: 'Podman', regex: new RegExp(`/libpod-(${HEX})\\.scope(?:/|$)`) },
  {
    label: 'container_id',
    by: 'kubelet, cgroupfs driver',
    regex: new RegExp(`/kubepods/(?:[a-z]+/)?pod(?:${POD_UID})/(?:crio-)?(${HEX64})(?:/|$)`),
  },
  {
    label: 'pod_uid',
    by: 'kubelet, systemd driver',
    regex: new RegExp(`/kubepods(?:-[a-z]+)?-pod(${POD_UID})\\.slice(?:/|$)`),
    value: dashes,
  },
  { label: 'pod_uid', by: 'kubelet, cgroupfs driver', regex: new RegExp(`/kubepods/(?:[a-z]+/)?pod(${POD_UID})(?:/|$)`), value: dashes },
  { label: 'slurm_job', by: 'Slurm, cgroup/v1', regex: /\/slurm[^/]*\/uid_\d+\/job_(\d+)(?:\/|$)/ },
  { label: 'slurm_job', by: 'Slurm, cgroup/v2', regex: /\/job_(\d+)\/step_[^/]+(?:\/|$)/ },
  // The deepest unit: user@1000.service/app.slice/train.service is train.service.
  { label: 'systemd_unit', by: 'systemd', regex: /.*\/([\w:.@\\-]+\.(?:service|scope))(?:\/|$)/ },
];

/** A systemd-driver pod uid (underscores) as Kubernetes prints it (dashes). */
function dashes(uid: string): string {
  return uid.replaceAll('_', '-');
}

/** One line of /proc/PID/cgroup ("0::/path" on v2, "4:memory:/path" on v1) -> the path, or undefined. */
export function cgroupPath(line: string): string | undefined {
  const first = line.indexOf(':');
  const second = first < 0 ? -1 : line.indexOf(':', first + 1);
  if (second < 0 || !/^\d+$/.test(line.slice(0, first))) return undefined;
  // A cgroup removed while the process is in it reads "/path (deleted)".
  const path = line.slice(second + 1).replace(/ \(deleted\)$/, '');
  return path.startsWith('/') ? path : undefined;
}

/**
 * /proc/PID/cgroup -> what it says about the process. Every line (each v1 hierarchy, the v2 one) is
 * read; per label the first match in the table wins. A unit is kept only for a process in neither a
 * container nor a Slurm job: there the unit is the runtime's (docker-<id>.scope, slurmstepd.scope),
 * not the workload's.
 */
export function parseCgroup(text: string): Attribution {
  const paths = text.split('\n').flatMap((line) => cgroupPath(line) ?? []);
  const found: Attribution = {};
  for (const pattern of PATTERNS) {
    if (found[pattern.label] !== undefined) continue;
    for (const path of paths) {
      const match = pattern.regex.exec(path)?.[1];
      if (match === undefined) continue;
      found[pattern.label] = pattern.value ? pattern.value(match) : match;
      break;
    }
  }
  if (found.container_id !== undefined || found.pod_uid !== undefined || found.slurm_job !== undefined) delete found.systemd_unit;
  return found;
}
