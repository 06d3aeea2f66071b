import { execa } from 'execa';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DCGM_PROFILES, profileFields } from '../../src/compat/dcgm-fields.js';
import { checkExposition, type ParsedSample } from '../../src/exposition/check.js';
import { capture, eventually, FIXTURES, ROOT, runCli, madeDir } from '../support/helpers.js';
import { startNodeExporter } from '../support/node-exporter.js';
import { startPrometheus } from '../support/prometheus.js';
import { standInConfig, standInLibrary } from '../support/nvml-stand-in.js';

// dcgm-exporter's generations of names (--compat dcgm, dcgm-4.8.3, dcgm-4.9, dcgm-4.10) against the
// lists taken from its repository and release notes (test/fixtures/compat/), side by side on one host
// through a real node_exporter, the recording rules of examples/dcgm-generations/ under promtool, and
// DeepOps' GPU dashboard's own queries on a real Prometheus with the documented scrape configuration.

const COMPAT = join(FIXTURES, 'compat');
const EXAMPLES = join(ROOT, 'examples/dcgm-generations');
const LOAD = 'h200x2__580.159.04__linux-load';
/**
 * Side by side on one host, the oldest and the newest; dcgm-4.8.3 and dcgm-4.9 in runs of their own
 * (each writes the legacy's or 4.10's names again, so a dashboard would show each GPU twice).
 */
const GENERATIONS = ['dcgm', 'dcgm-4.10'] as const;
const ALL = [...GENERATIONS, 'dcgm-4.8.3', 'dcgm-4.9'] as const;

/** The rows of a counters CSV, active and commented-out ("# NAME, type, help"): name -> [type, help, active]. */
async function countersCsv(file: string): Promise<Map<string, [string, string, boolean]>> {
  const rows = new Map<string, [string, string, boolean]>();
  for (const line of (await readFile(join(COMPAT, file), 'utf8')).split('\n')) {
    const match = /^(#\s*)?(DCGM_\w+)\s*,\s*(\w+)\s*,\s*(.*?)\s*$/.exec(line);
    if (match) rows.set(match[2]!, [match[3]!, match[4]!, match[1] === undefined]);
  }
  return rows;
}

/** The 4.9.0/4.10.0 list: legacy name -> its names and unit. */
async function namesCsv(): Promise<{ legacy: string; v49: string; v410: string; type: string; unit: string }[]> {
  const text = await readFile(join(COMPAT, 'dcgm-exporter-4.9-4.10-names.csv'), 'utf8');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const [legacy, v49, v410, type, unit] = line.split(',');
      return { legacy: legacy!, v49: v49!, v410: v410!, type: type!, unit: unit! };
    });
}

/** A legacy unit and the factor from our base unit to it; any other unit (C, W, counts, 4.9.0's base units) is ours, factor 1. */
const LEGACY_UNITS: Record<string, number> = { MHz: 1e-6, '%': 100, MiB: 1 / (1024 * 1024), mJ: 1000 };

describe('the generations against the lists at their tags', () => {
  it("dcgm and dcgm-4.8.3: dcgm-exporter 4.5.3-4.8.2's names, types and HELP texts (its default-counters.csv), units as the HELP says", async () => {
    const csv = await countersCsv('dcgm-exporter-4.5.3-4.8.2-default-counters.csv');
    for (const generation of ['dcgm', 'dcgm-4.8.3'] as const)
      for (const field of profileFields(DCGM_PROFILES[generation])) {
        expect([field.name, csv.get(field.name)?.slice(0, 2)]).toEqual([field.name, [field.type, field.help]]);
        const unit = /\(in (\w+|%)\)/.exec(field.help)?.[1] ?? '';
        expect([field.name, field.scale]).toEqual([field.name, LEGACY_UNITS[unit] ?? 1]);
      }
  });

  it('every active row of that list is written or named in docs/compat.md as absent, with why', async () => {
    const csv = await countersCsv('dcgm-exporter-4.5.3-4.8.2-default-counters.csv');
    const written = new Set(profileFields(DCGM_PROFILES.dcgm).map((f) => f.name));
    const doc = await readFile(join(ROOT, 'docs/compat.md'), 'utf8');
    const absent = [...csv].filter(([name, [type, , active]]) => active && type !== 'label' && !written.has(name)).map(([name]) => name);
    expect(absent.length).toBeGreaterThan(0);
    for (const name of absent) expect([name, new RegExp(`^\\| [^|]*\`${name}\``, 'm').test(doc)]).toEqual([name, true]);
  });

  it('dcgm-4.9 and dcgm-4.10: the names, types and units of the 4.9.0 and 4.10.0 list', async () => {
    const rows = await namesCsv();
    const legacy = profileFields(DCGM_PROFILES.dcgm);
    for (const [generation, column] of [
      ['dcgm-4.9', 'v49'],
      ['dcgm-4.10', 'v410'],
    ] as const) {
      const fields = profileFields(DCGM_PROFILES[generation]);
      expect(fields.length).toBe(legacy.length);
      for (const [i, field] of fields.entries()) {
        const row = rows.find((r) => r.legacy === legacy[i]!.name);
        expect([legacy[i]!.name, row && [row[column], row.type]]).toEqual([legacy[i]!.name, [field.name, field.type]]);
        // 4.9.0's units: ours (base units) but for the few that never had a unit to change.
        expect([field.name, field.scale]).toEqual([field.name, 1]);
        expect(['Hz', 'J', 'ratio', 'bytes', 'B/s', 'C', 'W', 'count', 'rows', '0/1']).toContain(row!.unit);
      }
    }
    // docs/compat.md's table of the renamed fields names each, with its 4.10.0 name where that differs.
    const doc = await readFile(join(ROOT, 'docs/compat.md'), 'utf8');
    for (const row of rows.filter((r) => r.v49 !== r.legacy || r.v410 !== r.legacy)) {
      const v410 = row.v410 === row.v49 ? '' : ` \`${row.v410}\``;
      expect([row.legacy, new RegExp(`^\\| \`${row.legacy}\` \\| \`${row.v49}\` \\| [^|]+ \\|${v410} \\|$`, 'm').test(doc)]).toEqual([
        row.legacy,
        true,
      ]);
    }
    // 4.9.0's release notes count 11 unit changes: these 10 and NVLink's throughput, which is not read.
    expect(
      rows.filter((r) => ['Hz', 'J', 'bytes'].includes(r.unit) || (r.unit === 'ratio' && !r.legacy.startsWith('DCGM_FI_PROF'))).length,
    ).toBe(10);
  });
});

/** One rule of examples/dcgm-generations/: what it records, from which name, and its unit conversion. */
interface Rule {
  record: string;
  source: string;
  op?: ['*' | '/', number];
}

async function rulesOf(file: string): Promise<Rule[]> {
  const text = await readFile(join(EXAMPLES, file), 'utf8');
  return [...text.matchAll(/- record: (\w+)\n\s+expr: >-\n\s+(.+)\n/g)].map(([, record, expr]) => {
    const converted = /\((\w+) ([*/]) (\d+)\)/.exec(expr!);
    const source = converted ? converted[1]! : /label_replace\((\w+),/.exec(expr!)![1]!;
    return { record: record!, source, op: converted ? [converted[2] as '*' | '/', Number(converted[3])] : undefined };
  });
}

const seriesKey = (labels: Record<string, string>) =>
  JSON.stringify(
    Object.entries(labels)
      .filter(([, v]) => v !== '')
      .sort(([a], [b]) => a.localeCompare(b)),
  );
const promLabels = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries(labels)
    .filter(([, v]) => v !== '')
    .map(([k, v]) => `${k}="${v}"`)
    .join(', ')}}`;

describe('the generations of one host (NVML stand-in, GPM, energy, PCIe): dcgm and dcgm-4.10 side by side', () => {
  let dir = '';
  let scraped: ParsedSample[] = [];
  const files: Partial<Record<(typeof ALL)[number], string>> = {};
  const stops: (() => Promise<void>)[] = [];
  let nodeTarget = '';
  let query: (expr: string) => Promise<{ metric: Record<string, string>; value: [number, string] }[]> = async () => [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-textfile-dcgm-generations-'));
    const textfile = join(dir, 't');
    await mkdir(textfile);
    const config = join(dir, 'stand-in.conf');
    const more = [0, 1].flatMap((gpu) => [`${gpu}.gpm=1`, `${gpu}.gpm.5=${30 + gpu}`, `${gpu}.energy_mj=98765432${gpu}`]);
    await writeFile(config, standInConfig(capture(LOAD), [...more, '0.pcie_tx=1200', '0.pcie_rx=3400', '1.pcie_tx=5', '1.pcie_rx=0']));
    const result = await runCli(
      [
        'collect',
        '--compat',
        GENERATIONS.join(','),
        '--source',
        'nvml',
        '--nvml-library',
        standInLibrary(),
        '--gpm-window',
        '20ms',
        '--slow-fields',
        '--textfile-dir',
        textfile,
        '--state-dir',
        join(dir, 's'),
      ],
      { NVML_STAND_IN: config },
    );
    expect([result.exitCode, result.stderr]).toEqual([0, '']);
    for (const generation of GENERATIONS) files[generation] = await readFile(join(textfile, `nvidia_gpu_${generation}.prom`), 'utf8');
    for (const generation of ['dcgm-4.8.3', 'dcgm-4.9'] as const) {
      const alone = madeDir(join(dir, generation));
      const run = await runCli(
        [
          'collect',
          '--compat',
          generation,
          '--source',
          'nvml',
          '--nvml-library',
          standInLibrary(),
          '--gpm-window',
          '20ms',
          '--slow-fields',
        ].concat(['--textfile-dir', alone, '--state-dir', join(dir, `${generation}-state`)]),
        { NVML_STAND_IN: config },
      );
      expect([run.exitCode, run.stderr]).toEqual([0, '']);
      files[generation] = await readFile(join(alone, `nvidia_gpu_${generation}.prom`), 'utf8');
    }
    const exporter = await startNodeExporter(textfile);
    stops.push(exporter.stop);
    scraped = checkExposition(await exporter.scrape()).samples;
    expect(scraped.find((s) => s.name === 'node_textfile_scrape_error')?.value, exporter.log()).toBe(0);
    nodeTarget = new URL(exporter.url).host;
    const scrapeConfig = (await readFile(join(EXAMPLES, 'deepops-scrape.yml'), 'utf8')).replaceAll(
      "['gpu-node-1:9100', 'gpu-node-2:9100']",
      `['${nodeTarget}']`,
    );
    const prometheus = await startPrometheus(dir, `global: {scrape_interval: 1s}\n${scrapeConfig}`);
    stops.push(prometheus.stop);
    query = prometheus.query;
    const ready = await eventually(async () => (await query('DCGM_FI_DEV_GPU_TEMP').catch(() => [])).length === 2, 90_000);
    expect(ready, prometheus.log()).toBe(true);
  }, 180_000);

  afterAll(async () => {
    for (const stop of stops.reverse()) await stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("each generation's file: promtool finds nothing but what DCGM's own names cause; its labels as its release names them", async () => {
    const ownLint = [/label names should be written in 'snake_case' not 'camelCase'$/, /counter metrics should have "_total" suffix$/];
    for (const generation of ALL) {
      const lint = await execa('promtool', ['check', 'metrics'], { input: files[generation], reject: false });
      const left = `${lint.stdout}\n${lint.stderr}`.split('\n').filter((l) => l.trim() !== '' && !ownLint.some((re) => re.test(l)));
      expect([generation, left]).toEqual([generation, []]);
      const profile = DCGM_PROFILES[generation];
      const temps = checkExposition(files[generation]!).samples.filter((s) => /^DCGM_FI_DEV_GPU_TEMP/.test(s.name));
      expect(temps.length).toBe(2);
      for (const s of temps) expect(Object.keys(s.labels)).toEqual(expect.arrayContaining([profile.hostnameLabel, profile.driverLabel]));
    }
  });

  /** The scraped series of one generation's file: those carrying its host and driver labels. */
  const ofGeneration = (generation: (typeof GENERATIONS)[number], name: string) =>
    scraped.filter(
      (s) => s.name === name && DCGM_PROFILES[generation].hostnameLabel in s.labels && DCGM_PROFILES[generation].driverLabel in s.labels,
    );

  it('dcgm and dcgm-4.10 give the same values in their units, GPU by GPU: clocks x 1e6, % / 100, MiB x 2^20, mJ / 1000, the rest equal', async () => {
    const legacy = profileFields(DCGM_PROFILES.dcgm);
    const latest = profileFields(DCGM_PROFILES['dcgm-4.10']);
    let compared = 0;
    for (const [i, old] of legacy.entries()) {
      const factor = latest[i]!.scale / old.scale;
      const before = ofGeneration('dcgm', old.name);
      const after = ofGeneration('dcgm-4.10', latest[i]!.name);
      expect([old.name, after.length]).toEqual([old.name, before.length]);
      for (const s of before) {
        const twin = after.find((a) => a.labels.gpu === s.labels.gpu && a.labels.GPU_I_ID === s.labels.GPU_I_ID)!;
        expect([old.name, twin.value]).toEqual([old.name, expect.closeTo(s.value * factor, 6)]);
        compared++;
      }
    }
    // Clocks, temperatures, power, energy, utilization, memory, the profiling ratios and PCIe, on 2 GPUs.
    expect(compared).toBeGreaterThanOrEqual(30);
  });

  it.each([
    ['dcgm-to-4.10.rules.yml', 'dcgm', 'dcgm-4.10'],
    ['dcgm-to-legacy.rules.yml', 'dcgm-4.10', 'dcgm'],
  ] as const)('%s (promtool test rules) turns the %s file into the %s file', async (file, from, to) => {
    const rules = await rulesOf(file);
    const rename =
      to === 'dcgm'
        ? { hostname: 'Hostname', DCGM_FI_SYSTEM_DRIVER_VERSION: 'DCGM_FI_DRIVER_VERSION' }
        : { Hostname: 'hostname', DCGM_FI_DRIVER_VERSION: 'DCGM_FI_SYSTEM_DRIVER_VERSION' };
    const inputs = checkExposition(files[from]!).samples;
    const targets = checkExposition(files[to]!).samples;
    const tests: object[] = [];
    const recorded: string[] = [];
    for (const rule of rules) {
      const source = inputs.filter((s) => s.name === rule.source);
      if (source.length === 0) continue;
      recorded.push(rule.record);
      // What the rule must give: the other file's series, valued as PromQL's arithmetic gives it.
      const expected = source.map((s) => {
        const labels = Object.fromEntries(Object.entries(s.labels).map(([k, v]) => [rename[k as keyof typeof rename] ?? k, v]));
        const value = rule.op === undefined ? s.value : rule.op[0] === '*' ? s.value * rule.op[1] : s.value / rule.op[1];
        const twin = targets.find((t) => t.name === rule.record && seriesKey(t.labels) === seriesKey(labels));
        expect([rule.record, twin?.value]).toEqual([rule.record, expect.closeTo(value, 6)]);
        return { labels: promLabels(rule.record, labels), value };
      });
      expect([rule.record, expected.length]).toEqual([rule.record, targets.filter((t) => t.name === rule.record).length]);
      tests.push({
        interval: '1m',
        input_series: source.map((s) => ({ series: promLabels(s.name, s.labels), values: `${s.value} ${s.value}` })),
        promql_expr_test: [{ expr: rule.record, eval_time: '1m', exp_samples: expected }],
      });
    }
    const testFile = join(dir, `${file}.test.yml`);
    await writeFile(testFile, JSON.stringify({ rule_files: [join(EXAMPLES, file)], evaluation_interval: '1m', tests }));
    const run = await execa('promtool', ['test', 'rules', testFile], { reject: false });
    expect({ exit: run.exitCode, out: run.stdout + run.stderr }).toMatchObject({ exit: 0 });
    // Every name the host writes has its rule (no Xid source on this host: the Xid gauge is not written).
    const written = new Set(inputs.map((s) => s.name));
    expect(rules.filter((r) => written.has(r.source)).map((r) => r.record)).toEqual(recorded);
    expect(recorded.length).toBeGreaterThanOrEqual(20);
  });

  it("DeepOps' GPU dashboard through the documented scrape configuration: the host variable lists the node, every DCGM panel but NVLink has data, once", async () => {
    const deepops = JSON.parse(await readFile(join(COMPAT, 'deepops-gpu-dashboard-queries.json'), 'utf8')) as {
      variable: string;
      variableRegex: string;
      panels: { title: string; expr: string }[];
    };
    // query_result(...) lists each series as text; the variable's regex takes the instance out of it.
    const listed = await query(/^query_result\((.*)\)$/.exec(deepops.variable)![1]!);
    const hosts = [...new Set(listed.map((s) => s.metric.instance))];
    const host = nodeTarget.split(':')[0]!;
    expect(hosts).toEqual([host]);
    const shown: string[] = [];
    for (const { title, expr } of deepops.panels) {
      const result = await query(expr.replaceAll('$hostname', host).replaceAll('[$__interval]', '[1m]'));
      if (result.length > 0) shown.push(title);
    }
    expect(shown).toEqual(deepops.panels.map((p) => p.title).filter((t) => t !== 'NVLINK Bandwidth'));
    // Each GPU once (the node job drops the DCGM series), on instance <host>:9400; node_exporter's own stay on :9100.
    expect((await query(`DCGM_FI_DEV_POWER_USAGE{instance="${host}:9400"}`)).length).toBe(2);
    expect((await query('count(DCGM_FI_DEV_POWER_USAGE)')).map((s) => s.value[1])).toEqual(['2']);
    expect((await query(`node_textfile_scrape_error{instance="${nodeTarget}"}`)).map((s) => s.value[1])).toEqual(['0']);
    const [total] = await query(`sum(DCGM_FI_PROF_PCIE_TX_BYTES{instance="${host}:9400"})`);
    expect(Number(total!.value[1])).toBe((1200 + 5) * 1024);
  });
});

describe('--compat with generations', () => {
  it('refuses dcgm-4.9 with dcgm-4.10 (the same series twice: node_exporter would refuse the file) with exit 2', async () => {
    const both = await runCli(['collect', '--compat', 'dcgm-4.9,dcgm-4.10', '--dry-run']);
    expect([both.exitCode, both.stderr]).toEqual([2, expect.stringContaining('dcgm-4.9 and dcgm-4.10 write the same series')]);
  });

  it("refuses a --label that is a label of the generation's series: hostname from dcgm-4.8.3 on, Hostname before", async () => {
    const taken = await runCli(['collect', '--compat', 'dcgm-4.8.3', '--label', 'hostname=x', '--dry-run']);
    expect([taken.exitCode, taken.stderr]).toEqual([2, expect.stringContaining('--label: "hostname" is a label of --compat dcgm-4.8.3')]);
    const driver = await runCli(['collect', '--compat', 'dcgm-4.10', '--label', 'DCGM_FI_SYSTEM_DRIVER_VERSION=x', '--dry-run']);
    expect(driver.exitCode).toBe(2);
    // Not a label of the legacy file's series: allowed there (it fails later only for --dry-run with --compat).
    const legacy = await runCli(['collect', '--compat', 'dcgm', '--label', 'hostname=x', '--dry-run']);
    expect(legacy.stderr).not.toContain('is a label of --compat');
  });
});
