// A rule file's recording rules over a range, as blocks, from a store's answers: what
// `promtool tsdb create-blocks-from rules` makes, at a cost that a year allows. promtool 2.42 writes
// one block per rule and 2 h (a year of the five-minute set: 34 x 4,380 = 149,000 blocks, some six
// hours here, and a Prometheus that must then open and compact them all). Here each rule is asked
// once a day (`query_range` at the group's interval, on the grid of its evaluations), the answers
// written as a day's OpenMetrics file and given to `promtool tsdb create-blocks-from openmetrics`:
// twelve blocks a day, every rule in each.
//
// promtool stays the judge of where a group's evaluations fall (Prometheus offsets a group within its
// interval by a hash of its name and its file's path): it backfills the range's first interval, and
// the grid is read from the block it writes. `checkAgainstPromtool` compares a day of this with
// promtool's own backfill of the same day, sample by sample.
import { execFile, execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

const DAY = 86_400_000;

/** The groups of a rule file: name, interval in ms, and the recording rules' names and expressions. */
function ruleGroups(file) {
  const json = execFileSync('python3', ['-c', 'import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))', file]);
  const durationMs = (text) => {
    const units = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
    const match = /^(\d+)(ms|s|m|h)$/.exec(text);
    if (!match) throw new Error(`${file}: an interval I cannot read: ${text}`);
    return Number(match[1]) * units[match[2]];
  };
  return JSON.parse(json).groups.map((group) => ({
    name: group.name,
    intervalMs: durationMs(group.interval),
    rules: group.rules.filter((rule) => rule.record).map((rule) => ({ record: rule.record, expr: rule.expr, labels: rule.labels ?? {} })),
  }));
}

/** promtool's backfill of `file` (by its name, from `cwd`) over [from, to]: the blocks it wrote, in a directory of their own. */
function promtoolBackfill({ url, cwd, file, from, to }) {
  const out = mkdtempSync(join(tmpdir(), 'rule-blocks-'));
  execFileSync(
    'promtool',
    [
      'tsdb',
      'create-blocks-from',
      'rules',
      '--quiet',
      `--start=${new Date(from).toISOString()}`,
      `--end=${new Date(to).toISOString()}`,
      `--url=${url}`,
      `--output-dir=${out}`,
      file,
    ],
    { cwd, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return out;
}

/** Where promtool puts the group's evaluations: their offset within the interval, ms. */
function evaluationOffset({ url, cwd, file, from, group }) {
  const out = promtoolBackfill({ url, cwd, file, from, to: from + 2 * group.intervalMs });
  try {
    // Any block with samples: every rule of a group is evaluated on the same grid.
    for (const block of readdirSync(out)) {
      const meta = JSON.parse(readFileSync(join(out, block, 'meta.json'), 'utf8'));
      if (meta.stats.numSamples > 0) return meta.minTime % group.intervalMs;
    }
    throw new Error(`promtool wrote no samples for ${group.name} from ${new Date(from).toISOString()}: nothing to align on`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

const seconds = (ms) => (ms / 1000).toFixed(3);
const labelText = (metric) =>
  Object.entries(metric)
    .filter(([name]) => name !== '__name__')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}="${value.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('"', '\\"')}"`)
    .join(',');

async function queryRange(url, expr, start, end, stepMs) {
  const body = new URLSearchParams({ query: expr, start: seconds(start), end: seconds(end), step: `${stepMs / 1000}` });
  const response = await fetch(`${url}/api/v1/query_range`, { method: 'POST', body });
  const answer = await response.json();
  if (answer.status !== 'success') throw new Error(`${expr}: ${answer.error}`);
  return answer.data.result;
}

/**
 * One day of a group's rules as an OpenMetrics file at `path`, a rule at a time (40 hosts' day is
 * some 400 MB of text: more than one string may hold): each rule a family, each series' samples in
 * time order. The samples written.
 */
async function writeDay(path, url, group, offset, dayStart, dayEnd) {
  // The evaluations in [dayStart, dayEnd): the grid t = offset (mod interval).
  const first = dayStart + ((((offset - dayStart) % group.intervalMs) + group.intervalMs) % group.intervalMs);
  const last = dayEnd - 1 - ((((dayEnd - 1 - offset) % group.intervalMs) + group.intervalMs) % group.intervalMs);
  const fd = openSync(path, 'wx');
  let samples = 0;
  try {
    for (const rule of group.rules) {
      if (last < first) break;
      const result = await queryRange(url, rule.expr, first, last, group.intervalMs);
      if (result.length === 0) continue;
      let text = `# TYPE ${rule.record} unknown\n`;
      for (const series of result) {
        const labels = labelText({ ...series.metric, ...rule.labels });
        const prefix = labels ? `${rule.record}{${labels}} ` : `${rule.record} `;
        for (const [at, value] of series.values) text += `${prefix}${value} ${Number(at).toFixed(3)}\n`;
        samples += series.values.length;
      }
      writeSync(fd, text);
    }
    writeSync(fd, '# EOF\n');
  } finally {
    closeSync(fd);
  }
  return samples;
}

/**
 * `file`'s recording rules over [since, until) from the store at `url`, written as blocks into
 * `outputDir` (as promtool's would be), `concurrency` days at once. `cwd` is where `file` is named
 * from (the path Prometheus loads it by: the group's offset is a hash of it).
 */
export async function backfillRules({ url, cwd, file, since, until, outputDir, concurrency = 2 }) {
  const groups = ruleGroups(join(cwd, file));
  // promtool's blocks do not say which group they are of: the grid read from them is one group's
  // only where the file holds one (each of examples/prometheus/'s does).
  if (groups.length !== 1) throw new Error(`${file}: ${groups.length} groups; give the rule files one group each`);
  const work = join(dirname(outputDir), `.${basename(outputDir)}.openmetrics`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(outputDir, { recursive: true });
  try {
    for (const group of groups) {
      const offset = evaluationOffset({ url, cwd, file, from: since, group });
      const days = [];
      for (let day = since; day < until; day += DAY) days.push(day);
      let next = 0;
      const worker = async () => {
        while (next < days.length) {
          const day = days[next++];
          const path = join(work, `${group.name}-${day}.om`);
          if ((await writeDay(path, url, group, offset, day, Math.min(day + DAY, until))) === 0) {
            rmSync(path);
            continue;
          }
          await new Promise((done, fail) =>
            execFile('promtool', ['tsdb', 'create-blocks-from', 'openmetrics', path, outputDir], (error) => (error ? fail(error) : done())),
          );
          rmSync(path);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, worker));
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Every sample in the blocks under `dir`, one sorted line each (`promtool tsdb dump`). */
const dump = (dir) => {
  mkdirSync(join(dir, 'wal'), { recursive: true }); // a read-only open still looks for one
  return execFileSync('promtool', ['tsdb', 'dump', dir], { maxBuffer: 1 << 30, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .sort();
};

/**
 * A day of `backfillRules` beside promtool's own backfill of the same day from the same store: the
 * samples each wrote and the first line where they differ (none where they agree).
 */
export async function checkAgainstPromtool({ url, cwd, file, day }) {
  const ours = mkdtempSync(join(tmpdir(), 'rule-blocks-ours-'));
  // promtool's `--end` is inclusive: its last evaluation may fall on the next day's first instant.
  const theirs = promtoolBackfill({ url, cwd, file, from: day, to: day + DAY - 1 });
  try {
    await backfillRules({ url, cwd, file, since: day, until: day + DAY, outputDir: ours, concurrency: 1 });
    const [a, b] = [dump(ours), dump(theirs)];
    const at = a.findIndex((line, i) => line !== b[i]);
    return {
      ours: a.length,
      promtool: b.length,
      firstDifference: at >= 0 || a.length !== b.length ? { ours: a[at], promtool: b[at] } : undefined,
    };
  } finally {
    rmSync(ours, { recursive: true, force: true });
    rmSync(theirs, { recursive: true, force: true });
  }
}
