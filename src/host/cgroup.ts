// Who a process runs for, read from its control group: /proc/PID/cgroup names the cgroup of every
// hierarchy the process is in, and container runtimes, the kubelet, systemd and Slurm each name
// their cgroups in a documented way. Pure: the reader is src/host/processes.ts.

/** The labels attribution adds to a process's series, in the order they are written. */
export const ATTRIBUTION_LABELS = ['container_id', 'pod_uid', 'systemd_unit', 'slurm_job'] as const;

export type AttributionLabel = (typeof ATTRIBUTION_LABELS)[number];

/**
 * What a process's cgroup says about it; a label the path does not show is absent. `user_manager`
 * (no label of its own): the user's systemd manager (`user@1001.service`) a `systemd_unit` lies
 * below, for its unit is named by that user: `triton.service` under it is not root's system
 * `triton.service`, and must not be one job with it (src/host/job.ts).
 */
export type Attribution = Partial<Record<AttributionLabel | 'user_manager', string>>;

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
// A Slurm job id is a uint32: at most 10 digits.
const JOB_ID = '\\d{1,10}';
/** No value is longer: a unit name's most (systemd's UNIT_NAME_MAX, 256 with the NUL) and a cgroup directory's (NAME_MAX). */
export const MAX_ATTRIBUTION_CHARS = 255;

// Anchoring. Below user@UID.service systemd hands the subtree to that user, who may make any
// directory there (app.slice/job_4242/step_0, docker-<id>.scope): a name means what its manager
// says only where that manager makes it, and every such place is owned by root from the top of
// the path down. So each pattern starts at the path's root, with the slices above the scope
// (system.slice, kubepods.slice/kubepods-<qos>.slice) optional: a path read through a cgroup
// namespace (an exporter in a container) starts below them, see cgroupPath.
const SLICE = '(?:(?:system|machine)\\.slice/)?';
/** The systemd driver's pod slice; `uid` says whether the uid is group 1. */
const podSlice = (uid: boolean) =>
  `(?:kubepods\\.slice/)?(?:kubepods-(?:besteffort|burstable)\\.slice/)?kubepods(?:-(?:besteffort|burstable))?-pod(${uid ? '' : '?:'}${POD_UID})\\.slice`;
/** The cgroupfs driver's pod directory; `uid` says whether the uid is group 1. */
const podDir = (uid: boolean) => `(?:kubepods/)?(?:(?:besteffort|burstable)/)?pod(${uid ? '' : '?:'}${POD_UID})`;
/** Where a container runtime's scope may sit: a root-owned slice, or a pod's slice. */
const SCOPE_PARENT = `(?:${SLICE}|${podSlice(false)}/)`;
const END = '(?:/|$)';

/**
 * Every way of naming a cgroup that attribution knows, first match per label wins. Sources:
 * Docker's cgroup drivers (docs.docker.com/engine/containers/runmetrics/: `/docker/<id>` with
 * cgroupfs, `system.slice/docker-<id>.scope` with systemd); the kubelet's cgroup drivers
 * (kubernetes.io/docs/concepts/architecture/cgroups/, pkg/kubelet/cm/cgroup_manager_linux.go:
 * `kubepods-<qos>-pod<uid>.slice` with systemd, `/kubepods/<qos>/pod<uid>/<container id>` with
 * cgroupfs); containerd's CRI plugin (`cri-containerd-<id>.scope`), CRI-O (`crio-<id>.scope`, its
 * `crio-conmon-<id>.scope` being the monitor, not the container), Podman (`machine.slice/libpod-<id>.scope`,
 * `libpod-conmon-…` likewise); systemd's unit names (systemd.unit(5): `.service`, `.scope`,
 * `run-r<hex>.scope` from systemd-run --scope); Slurm's cgroup plugins (slurm.schedmd.com/cgroups.html:
 * `/slurm/uid_<uid>/job_<id>/step_<id>` with cgroup/v1, `system.slice/slurmstepd.scope/job_<id>/step_<id>`
 * with v2, `<node>_slurmstepd.scope` with several slurmd on one host).
 */
const PATTERNS: readonly Pattern[] = [
  { label: 'container_id', by: 'Docker, systemd driver', regex: new RegExp(`^/${SCOPE_PARENT}docker-(${HEX64})\\.scope${END}`) },
  { label: 'container_id', by: 'Docker, cgroupfs driver', regex: new RegExp(`^/docker/(${HEX64})${END}`) },
  {
    label: 'container_id',
    by: 'containerd CRI, systemd driver',
    regex: new RegExp(`^/${SCOPE_PARENT}cri-containerd-(${HEX})\\.scope${END}`),
  },
  { label: 'container_id', by: 'CRI-O, systemd driver', regex: new RegExp(`^/${SCOPE_PARENT}crio-(${HEX})\\.scope${END}`) },
  { label: 'container_id', by: 'Podman, rootful', regex: new RegExp(`^/${SCOPE_PARENT}libpod-(${HEX})\\.scope${END}`) },
  { label: 'container_id', by: 'kubelet, cgroupfs driver', regex: new RegExp(`^/${podDir(false)}/(?:crio-)?(${HEX64})${END}`) },
  { label: 'pod_uid', by: 'kubelet, systemd driver', regex: new RegExp(`^/${podSlice(true)}${END}`), value: dashes },
  { label: 'pod_uid', by: 'kubelet, cgroupfs driver', regex: new RegExp(`^/${podDir(true)}${END}`), value: dashes },
  { label: 'slurm_job', by: 'Slurm, cgroup/v1', regex: new RegExp(`^/slurm[^/]*/uid_\\d+/job_(${JOB_ID})${END}`) },
  { label: 'slurm_job', by: 'Slurm, cgroup/v2', regex: new RegExp(`^/${SLICE}(?:[\\w.-]+_)?slurmstepd\\.scope/job_(${JOB_ID})${END}`) },
  // The deepest unit: user@1000.service/app.slice/train.service is train.service. Not anchored:
  // systemd makes units at every depth, and one below user@UID.service is named by that user,
  // whose name the `user` label carries beside it.
  { label: 'systemd_unit', by: 'systemd', regex: /.*\/([\w:.@\\-]+\.(?:service|scope))(?:\/|$)/ },
];

/** The user manager a path lies below: systemd's `user@UID.service`, with a unit below it. */
const USER_MANAGER = /\/(user@\d{1,10}\.service)\//;

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
  // Read through a cgroup namespace (an exporter in a container, `docker run --cgroupns=private`,
  // the default on cgroup v2), a cgroup outside it reads "/../../kubepods.slice/…": up from the
  // namespace's root to an ancestor of it, then down. What follows the climb starts at a child of
  // that ancestor, a root-owned cgroup, as a path from the root does: so it is read as one.
  const path = line
    .slice(second + 1)
    .replace(/ \(deleted\)$/, '')
    .replace(/^\/(?:\.\.(?:\/|$))+/, '/');
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
  let unitPath: string | undefined;
  for (const pattern of PATTERNS) {
    if (found[pattern.label] !== undefined) continue;
    for (const path of paths) {
      const match = pattern.regex.exec(path)?.[1];
      if (match === undefined || match.length > MAX_ATTRIBUTION_CHARS) continue;
      found[pattern.label] = pattern.value ? pattern.value(match) : match;
      if (pattern.label === 'systemd_unit') unitPath = path;
      break;
    }
  }
  if (found.container_id !== undefined || found.pod_uid !== undefined || found.slurm_job !== undefined) delete found.systemd_unit;
  // A unit below a user's manager (not the manager itself): that user named it.
  const manager = unitPath === undefined ? undefined : USER_MANAGER.exec(unitPath)?.[1];
  if (found.systemd_unit !== undefined && manager !== undefined && manager !== found.systemd_unit) found.user_manager = manager;
  return found;
}
