import { chmod, copyFile, cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { execa } from 'execa';
import { CAPTURES, FAKE_SMI, ROOT } from '../../support/helpers.js';
import { bootContainer, type Container } from './container.js';
import { parseJournal, type JournalEntry } from './journal.js';

/** Where the stand-in nvidia-smi and its captures live in the container: readable under ProtectSystem=strict, not hidden by ProtectHome. */
export const TEST_DIR = '/opt/gpu-textfile-test';
/** Names the capture the stand-in replays; the test switches it to make nvidia-smi fail. */
const CAPTURE_CHOICE = '/etc/gpu-textfile-test/capture';

export const GOOD_CAPTURE = 'h200__590.48.01__linux-idle';
/** Exit 9, "couldn't communicate with the NVIDIA driver": the reason is driver_unreachable. */
export const FAILING_CAPTURE = 'constructed__driver-unreachable';

/**
 * nvidia-smi as a user's PATH finds it (/usr/local/bin is on the PATH systemd gives services and on
 * cron.d's): the stand-in, replaying the chosen capture.
 */
const nvidiaSmi = (node?: string) => `#!/bin/sh
FAKE_SMI_CAPTURE=${TEST_DIR}/captures/$(cat ${CAPTURE_CHOICE})
export FAKE_SMI_CAPTURE
exec ${node ? `${node} ` : ''}${TEST_DIR}/bin/nvidia-smi "$@"
`;

/** The cached Debian root (built on first use: minutes). */
export async function debianRoot(): Promise<string> {
  const built = await execa(join(import.meta.dirname, 'debian-root.sh'), { timeout: 15 * 60_000 });
  return built.stdout.trim();
}

/** The package as `npm pack` makes it from this checkout's dist/ (global setup built it; no script runs again). */
async function packTarball(destination: string): Promise<string> {
  const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', destination], {
    cwd: ROOT,
    timeout: 120_000,
  });
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  return filename;
}

/** Node.js copied in as one binary and npm beside it, where a Debian user's /usr/bin/node would be. */
async function copyNode(upper: string): Promise<void> {
  await mkdir(join(upper, 'usr/bin'), { recursive: true });
  await copyFile(process.execPath, join(upper, 'usr/bin/node'));
  await cp(join(dirname(process.execPath), '../lib/node_modules/npm'), join(upper, 'usr/lib/node_modules/npm'), {
    recursive: true,
    verbatimSymlinks: true,
  });
  await symlink('../lib/node_modules/npm/bin/npm-cli.js', join(upper, 'usr/bin/npm'));
}

/** The stand-in nvidia-smi, run by `node` where given (a root with no Node.js on PATH), and its captures. */
export async function addStandIn(upper: string, node?: string): Promise<void> {
  await mkdir(join(upper, TEST_DIR, 'bin'), { recursive: true });
  await copyFile(FAKE_SMI, join(upper, TEST_DIR, 'bin/nvidia-smi'));
  for (const name of [GOOD_CAPTURE, FAILING_CAPTURE])
    await cp(join(CAPTURES, name), join(upper, TEST_DIR, 'captures', name), { recursive: true });
  await mkdir(join(upper, 'usr/local/bin'), { recursive: true });
  await writeFile(join(upper, 'usr/local/bin/nvidia-smi'), nvidiaSmi(node));
  await chmod(join(upper, 'usr/local/bin/nvidia-smi'), 0o755);
  await mkdir(join(upper, dirname(CAPTURE_CHOICE)), { recursive: true });
  await writeFile(join(upper, CAPTURE_CHOICE), `${GOOD_CAPTURE}\n`);
}

/**
 * A booted Debian with node_exporter running, the stand-in nvidia-smi on PATH and gpu-textfile
 * installed from its npm tarball the way the README says (`npm install -g`), nothing configured yet.
 */
export async function bootWithPackage(): Promise<Container> {
  const root = await debianRoot();
  const scratch = await mkdtemp(join(tmpdir(), 'gpu-textfile-pack-'));
  try {
    const tarball = await packTarball(scratch);
    const box = await bootContainer(root, async (upper) => {
      await copyNode(upper);
      await addStandIn(upper);
      await copyFile(join(scratch, tarball), join(upper, TEST_DIR, tarball));
    });
    try {
      // --offline: the container has no network, and the package has no dependencies to fetch.
      await box.sh(`npm install -g --offline --no-audit --no-fund ${TEST_DIR}/${tarball}`, { timeoutMs: 120_000 });
    } catch (error) {
      await box.stop();
      throw error;
    }
    return box;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Makes the stand-in replay `capture` from its next call on (a rename: a call never reads half a name). */
export const useCapture = (box: Container, capture: string) =>
  box.sh(`echo ${capture} > ${CAPTURE_CHOICE}.new && mv ${CAPTURE_CHOICE}.new ${CAPTURE_CHOICE}`);

/** The container's journal (`journalctl ARGS -o json`). */
export const journal = async (box: Container, args: readonly string[] = []): Promise<JournalEntry[]> =>
  parseJournal((await box.run(['journalctl', '--no-pager', '-o', 'json', ...args])).stdout);

/** What the container's node_exporter serves on 127.0.0.1:9100 (Debian's default port; the network is the container's own). */
export const scrape = (box: Container, node = 'node') =>
  box.sh(
    `${node} -e 'fetch("http://127.0.0.1:9100/metrics").then(async (r) => { if (!r.ok) throw new Error(r.status); process.stdout.write(await r.text()); })'`,
  );

/** The value of the sample `series` (name and labels exactly as written) in exposition text, if present. */
export function sampleValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The CSV trail's rows as { time (seconds), status }, oldest first; none while the file is missing. */
export async function csvRows(box: Container, path: string): Promise<{ time: number; status: string }[]> {
  const text = (await box.run(['cat', path])).stdout;
  const [header, ...rows] = text.split('\n').filter((line) => line !== '');
  const columns = (header ?? '').split(',');
  return rows.map((row) => {
    const cells = row.split(',');
    return { time: Date.parse(cells[columns.indexOf('time')]!) / 1000, status: cells[columns.indexOf('status')]! };
  });
}
