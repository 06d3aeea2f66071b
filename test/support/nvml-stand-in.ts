import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { expect, onTestFinished } from 'vitest';
import { checkExposition, type ParsedSample } from '../../src/exposition/check.js';
import { FIELDS } from '../../src/fields/fields.js';
import { fieldNames } from '../../src/fields/field-spec.js';
import { startNodeExporter } from './node-exporter.js';
import { CLI, FIXTURES, cliEnv, madeDir, runCli, tempDir } from './helpers.js';

// The stand-in libnvidia-ml.so.1 (test/fixtures/nvml-stand-in/libnvidia-ml.c), built with gcc by the
// global set-up into a temp folder named after its source, and its config written from a capture.

const SOURCE = join(FIXTURES, 'nvml-stand-in/libnvidia-ml.c');

/** Where the stand-in library built from the current source lies. */
export function standInLibrary(): string {
  const hash = createHash('sha256').update(readFileSync(SOURCE)).digest('hex').slice(0, 12);
  return join(tmpdir(), `gpu-textfile-nvml-stand-in-${hash}`, 'libnvidia-ml.so.1');
}

/** Builds the stand-in unless this source's build is there (renamed into place: a half-written one is never seen). */
export function buildStandIn(): string {
  const library = standInLibrary();
  if (existsSync(library)) return library;
  mkdirSync(join(library, '..'), { recursive: true });
  const temp = `${library}.${process.pid}.tmp`;
  execFileSync('gcc', ['-shared', '-fPIC', '-O1', '-Wall', '-Werror', '-o', temp, SOURCE]);
  renameSync(temp, library);
  return library;
}

/**
 * The stand-in built without one export (-DWITHOUT_<function>; the source says which it can leave
 * out), as an older driver's library lacks the functions added after it. Built once per source.
 */
export function buildStandInWithout(fn: string): string {
  const hash = createHash('sha256').update(readFileSync(SOURCE)).update(fn).digest('hex').slice(0, 12);
  const library = join(tmpdir(), `gpu-textfile-nvml-stand-in-without-${hash}`, 'libnvidia-ml.so.1');
  if (existsSync(library)) return library;
  mkdirSync(join(library, '..'), { recursive: true });
  const temp = `${library}.${process.pid}.tmp`;
  execFileSync('gcc', ['-shared', '-fPIC', '-O1', '-Wall', '-Werror', `-DWITHOUT_${fn}`, '-o', temp, SOURCE]);
  const symbols = execFileSync('nm', ['-D', '--defined-only', temp], { encoding: 'utf8' });
  if (new RegExp(`\\b${fn}\\b`).test(symbols)) throw new Error(`the stand-in cannot leave out ${fn}: no WITHOUT_${fn} in its source`);
  renameSync(temp, library);
  return library;
}

const MIB = 1024 * 1024;
type Convert = (cell: string) => string | undefined;
const same: Convert = (cell) => cell;
const times =
  (factor: number): Convert =>
  (cell) =>
    String(Math.round(Number(cell) * factor));
const word =
  (yes: string): Convert =>
  (cell) =>
    cell === yes ? '1' : '0';
const among =
  (states: readonly string[]): Convert =>
  (cell) =>
    String(states.indexOf(cell));

/** nvidia-smi field -> the stand-in's key and how its printed value becomes NVML's raw one. */
const KEYS: Record<string, [string, Convert][]> = {
  uuid: [['uuid', same]],
  name: [['name', same]],
  serial: [['serial', same]],
  vbios_version: [['vbios', same]],
  'pci.bus_id': [['bus_id', same]],
  compute_cap: [
    ['cc_major', (cell) => cell.split('.')[0]],
    ['cc_minor', (cell) => cell.split('.')[1]],
  ],
  'utilization.gpu': [['util_gpu', same]],
  'utilization.memory': [['util_mem', same]],
  'utilization.encoder': [['enc', same]],
  'utilization.decoder': [['dec', same]],
  'memory.total': [['mem_total', times(MIB)]],
  'memory.reserved': [['mem_reserved', times(MIB)]],
  'memory.free': [['mem_free', times(MIB)]],
  'memory.used': [['mem_used', times(MIB)]],
  'power.draw': [['power_mw', times(1000)]],
  'power.draw.instant': [['field.186', times(1000)]],
  'power.limit': [['limit_mw', times(1000)]],
  'enforced.power.limit': [['enforced_mw', times(1000)]],
  'power.default_limit': [['default_mw', times(1000)]],
  'power.min_limit': [['min_mw', times(1000)]],
  'power.max_limit': [['max_mw', times(1000)]],
  'temperature.gpu': [['temp', same]],
  'temperature.memory': [['field.82', same]],
  'temperature.gpu.tlimit': [['tlimit', same]],
  'clocks.current.graphics': [['clock.0', same]],
  'clocks.current.sm': [['clock.1', same]],
  'clocks.current.memory': [['clock.2', same]],
  'clocks.current.video': [['clock.3', same]],
  'clocks.max.graphics': [['max_clock.0', same]],
  'clocks.max.sm': [['max_clock.1', same]],
  'clocks.max.memory': [['max_clock.2', same]],
  'fan.speed': [['fan', same]],
  pstate: [['pstate', (cell) => cell.slice(1)]],
  persistence_mode: [['persistence', word('Enabled')]],
  compute_mode: [['compute_mode', among(FIELDS.find((f) => f.query === 'compute_mode')!.states!)]],
  'mig.mode.current': [['mig_current', word('Enabled')]],
  'mig.mode.pending': [['mig_pending', word('Enabled')]],
  'ecc.mode.current': [['ecc_current', word('Enabled')]],
  gpu_recovery_action: [['field.230', among(FIELDS.find((f) => f.query === 'gpu_recovery_action')!.states!)]],
  'pcie.link.gen.current': [['pcie_gen', same]],
  'pcie.link.gen.max': [['pcie_gen_max', same]],
  'pcie.link.width.current': [['pcie_width', same]],
  'pcie.link.width.max': [['pcie_width_max', same]],
  'clocks_event_reasons.active': [['reasons', (cell) => BigInt(cell).toString()]],
  'ecc.errors.corrected.volatile.total': [['ecc.0.0', same]],
  'ecc.errors.uncorrected.volatile.total': [['ecc.1.0', same]],
  'ecc.errors.corrected.aggregate.total': [['ecc.0.1', same]],
  'ecc.errors.uncorrected.aggregate.total': [['ecc.1.1', same]],
  'remapped_rows.correctable': [['remap_cor', same]],
  'remapped_rows.uncorrectable': [['remap_unc', same]],
  'remapped_rows.pending': [['remap_pending', word('Yes')]],
  'remapped_rows.failure': [['remap_failure', word('Yes')]],
  'retired_pages.single_bit_ecc.count': [['retired.0', same]],
  'retired_pages.double_bit.count': [['retired.1', same]],
  'retired_pages.pending': [['retired_pending', word('Yes')]],
};
/** Names the table has no field for but the stand-in needs (the event reasons' bitmask). */
const EXTRA_NAMES: Record<string, string[]> = {
  'clocks_event_reasons.active': ['clocks_event_reasons.active', 'clocks_throttle_reasons.active'],
};

/** A recorded --format=csv file -> header names (units stripped) and rows of cells. */
function readCsv(path: string): { names: string[]; rows: string[][] } {
  const [header = '', ...lines] = readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');
  return { names: header.split(', ').map((name) => name.replace(/ \[.*\]$/, '').trim()), rows: lines.map((line) => line.split(', ')) };
}

const ABSENT = /^\[.*\]$|^N\/A$/;

/**
 * The stand-in's config for a capture folder (query-gpu.csv, query-compute-apps.csv): the same GPUs,
 * values and processes, in NVML's units; a cell nvidia-smi printed as [N/A] is a key left out
 * (NVML_ERROR_NOT_SUPPORTED). `more` lines are appended (they win: the stand-in reads the last).
 */
export function standInConfig(captureDir: string, more: string[] = []): string {
  const gpus = readCsv(join(captureDir, 'query-gpu.csv'));
  const cellOf = (row: string[], query: string): string | undefined => {
    const names = EXTRA_NAMES[query] ?? fieldNames(FIELDS.find((field) => field.query === query)!);
    const at = names.map((name) => gpus.names.indexOf(name)).find((i) => i >= 0);
    const cell = at === undefined ? undefined : row[at]?.trim().replace(/ (%|W|MHz|MiB|C)$/, '');
    return cell === undefined || ABSENT.test(cell) ? undefined : cell;
  };
  const lines = [`count=${gpus.rows.length}`];
  const driver = gpus.rows[0] && cellOf(gpus.rows[0], 'driver_version');
  if (driver) lines.push(`driver=${driver}`);
  // The CUDA version nvidia-smi --version printed for this capture ("CUDA Version : 13.1"), in NVML's encoding.
  const versionFile = join(captureDir, 'version.txt');
  const cuda = existsSync(versionFile) ? /^CUDA Version\s*:\s*(\d+)\.(\d+)/m.exec(readFileSync(versionFile, 'utf8')) : null;
  if (cuda) lines.push(`cuda=${Number(cuda[1]) * 1000 + Number(cuda[2]) * 10}`);
  const uuids: string[] = [];
  for (const [i, row] of gpus.rows.entries()) {
    uuids.push(cellOf(row, 'uuid') ?? '');
    for (const [query, keys] of Object.entries(KEYS)) {
      const cell = cellOf(row, query);
      if (cell === undefined) continue;
      for (const [key, convert] of keys) {
        const value = convert(cell);
        if (value !== undefined && value !== '-1') lines.push(`${i}.${key}=${value}`);
      }
    }
  }
  const appsFile = join(captureDir, 'query-compute-apps.csv');
  if (existsSync(appsFile)) {
    const apps = readCsv(appsFile);
    const col = (row: string[], name: string) => row[apps.names.indexOf(name)]?.trim() ?? '';
    const byGpu = new Map<number, string[]>();
    for (const row of apps.rows) {
      const gpu = uuids.indexOf(col(row, 'gpu_uuid'));
      const pid = col(row, 'pid');
      if (gpu < 0) continue;
      byGpu.set(gpu, [...(byGpu.get(gpu) ?? []), `${pid}:${Number(col(row, 'used_gpu_memory').replace(/ MiB$/, '')) * MIB}`]);
      lines.push(`name.${pid}=${col(row, 'process_name')}`);
    }
    for (const [gpu, procs] of byGpu) lines.push(`${gpu}.procs=${procs.join(',')}`);
  }
  return `${[...lines, ...more].join('\n')}\n`;
}

/** Fixtures recorded from (or built for) NVML calls: test/fixtures/nvml-calls/<gpu>__<driver>__<case>/. */
export const NVML_CALLS = join(FIXTURES, 'nvml-calls');

/**
 * Stand-in keys replaying a recorded per-process utilization answer (bench/nvml-process-mig-probe.mjs's
 * JSON lines): the last answer of `call` that returned samples, for GPU `gpu`, with the buffer size the
 * driver asked for, the process listed with the memory nvidia-smi showed then (apps.csv) and its name.
 */
export function recordedProcessUtilization(dir: string, gpu = 0, call = 'nvmlDeviceGetProcessUtilization(NULL first, since 0)'): string[] {
  const answers = readFileSync(join(dir, 'load.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { call: string; rc: number; nullCount?: number; samples?: Record<string, number | string>[] })
    .filter((answer) => answer.call === call && answer.rc === 0 && (answer.samples ?? []).length > 0);
  const last = answers.at(-1)!;
  const samples = last.samples!.map((s) => `${s.pid}:${s.smUtil}:${s.memUtil}:${s.timeStamp}`);
  const apps = readCsv(join(dir, 'apps.csv'));
  const processes = apps.rows.map((row) => `${row[1]!.trim()}:${Number(row[3]!.replace(/ MiB$/, '')) * MIB}`);
  return [
    `${gpu}.putil=${samples.join(',')}`,
    `${gpu}.putil_room=${last.nullCount}`,
    `${gpu}.procs=${processes.join(',')}`,
    ...apps.rows.map((row) => `name.${row[1]!.trim()}=${row[2]!.trim()}`),
  ];
}

/** Runs `collect --source nvml` (--dry-run unless `more` names a textfile dir) with the stand-in answering from `config`. */
export async function collectWithStandIn(config: string, ...more: string[]) {
  const dir = await tempDir();
  const file = join(dir, 'stand-in.conf');
  await writeFile(file, config);
  const output = more.includes('--textfile-dir') ? [] : ['--dry-run'];
  return runCli(
    ['collect', ...output, '--state-dir', join(dir, 'state'), '--source', 'nvml', '--nvml-library', standInLibrary(), ...more],
    {
      NVML_STAND_IN: file,
    },
  );
}

/**
 * `collect --source nvml` with the stand-in answering from `config`, into a textfile directory the
 * real node_exporter serves: its scrape, read back, after checking the run and the scrape went well.
 */
export async function servedByNodeExporter(config: string): Promise<ParsedSample[]> {
  const dir = await tempDir();
  const exporter = await startNodeExporter(join(dir, 'textfile'));
  onTestFinished(() => exporter.stop());
  const result = await collectWithStandIn(config, '--textfile-dir', madeDir(join(dir, 'textfile')));
  expect([result.exitCode, result.stderr]).toEqual([0, '']);
  const scraped = checkExposition(await exporter.scrape()).samples;
  expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
  return scraped;
}

/** `collect --interval 100ms --source nvml` with the stand-in answering from the file `config`: textfile in DIR/t, state in DIR/s. */
export function startDaemonWithStandIn(config: string, dir: string, library = standInLibrary()) {
  const args = ['collect', '--interval', '100ms', '--no-processes', '--source', 'nvml', '--nvml-library', library];
  return execa(process.execPath, [CLI, ...args, '--textfile-dir', madeDir(join(dir, 't')), '--state-dir', join(dir, 's')], {
    env: cliEnv({ NVML_STAND_IN: config }),
    extendEnv: false,
    reject: false,
  });
}
