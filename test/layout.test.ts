import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/helpers.js';

// The "Done when", checked over every src/**/*.ts: src/ reads as the pipeline, no import runs
// back up a layer, no import cycle, a short export surface per module, no '/proc' literal outside src/host/.

const SRC = join(ROOT, 'src');

/**
 * The layers, from the top. A module is in the group named by the longest entry of this table that is
 * its path under src/ without .ts, or a folder above it: `host/processes.ts` is in `host/processes`,
 * `host/host.ts` in `host`, `collect/daemon.ts` in `collect`. The rule: a module may import modules of
 * its own group, and of any group in a LATER layer; never an earlier layer, nor another group of its
 * own layer (sources and publish do not know each other, nor do doctor and report). Only the last
 * layer, the shared concerns, may import each other freely (their cycles are still caught below).
 *
 * The order is the pipeline cli → commands → collect → sources → collection → metrics/csv →
 * exposition/publish read as who calls whom: the driving stages (cli, commands, collect) call into
 * everything after them; collect reads from a source and hands the collection to publish, which
 * renders it (metrics, then exposition) and appends the CSV rows; the data model lies beneath every
 * stage it flows through. doctor, report, pulse and deploy stand beside the pipeline: commands (and
 * collect, for doctor's quick diagnosis) call them, and they may use what lies below.
 */
const LAYERS: readonly (readonly string[])[] = [
  // The packaged program's startup snapshot: its entry point holds the whole CLI (scripts/snapshot.mjs).
  ['launch/snapshot'],
  ['cli'],
  ['commands'],
  // `run -- CMD`: drives the daemon mode's loop (collect) for one job, and reads pulse and the sources below it.
  ['run'],
  ['collect'],
  // The owners of the processes collect saw: builds the collection's process samples, so it sits above the data model.
  ['host/processes'],
  // `export`: the CSV trail as a store's import; finds the trail's files the way report does.
  ['export'],
  ['doctor', 'report', 'pulse', 'deploy', 'launch', 'docs'],
  ['sources', 'publish'],
  // metrics/ holds the families' catalog too: commands (reserved --label names) and docs read it without building any.
  // compat/ renders the same collection in a peer exporter's names (dcgm-exporter's): publish writes its file beside ours.
  ['metrics', 'csvlog', 'compat'],
  ['exposition'],
  ['collection'],
  // The shared concerns: the field table, safe file handling, the host's files, locks, statistics, Xid.
  ['fields', 'files', 'host', 'locks', 'stats', 'xid'],
];
const SHARED = LAYERS.length - 1;

/** The most names one module may export: past it, a module is a folder's worth of ideas. */
const MAX_EXPORTS = 20;
/** The modules that may re-export, and why one module must stand for several there. */
const RE_EXPORTERS = new Map([
  ['sources/nvml/source.ts', "dist/nvml.js's entry point (scripts/build.mjs): bench/ times NVML's calls through the bundle users run"],
  ['publish/publish.ts', 'collect loads publishing with one import() while nvidia-smi runs; its temp-file cleanup comes with it'],
]);
/** The most lines one module may hold: far above what one idea here takes (the longest is about 270). */
const MAX_LINES = 500;
const GROUPS = LAYERS.flat().sort((a, b) => b.length - a.length);

const layerOf = (group: string) => LAYERS.findIndex((groups) => groups.includes(group));
const groupOf = (file: string) => {
  const name = file.replace(/\.ts$/, '');
  return GROUPS.find((group) => name === group || name.startsWith(`${group}/`)) ?? name.split('/')[0]!;
};

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [relative(SRC, join(dir, entry.name))] : [],
  );
}

/** Relative imports of a module (static, re-exports, dynamic import()), as paths under src/. */
function importsOf(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)].map(
    (m) => m[1] ?? m[2]!,
  );
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => relative(SRC, resolve(dirname(join(SRC, file)), s)).replace(/\.js$/, '.ts'));
}

/** The text without comments: a path in a comment is documentation, not a literal. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

/** The names a module exports: declarations, and the names in export { ... } lists (re-exports included). */
function exportedNames(text: string): string[] {
  const body = code(text);
  const declared = [
    ...body.matchAll(
      /^export\s+(?:default\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\*?|const|let|var|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm,
    ),
  ];
  const listed = [...body.matchAll(/^export\s+(?:type\s+)?\{([^}]*)\}/gm)].flatMap((m) =>
    m[1]!.split(',').flatMap((part) => {
      const name = part
        .trim()
        .split(/\s+as\s+/)
        .pop()!;
      return name ? [name.replace(/^type\s+/, '')] : [];
    }),
  );
  return [...declared.map((m) => m[1]!), ...listed];
}

const files = sourceFiles();
const texts = new Map(files.map((file) => [file, readFileSync(join(SRC, file), 'utf8')]));
const graph = new Map(files.map((file) => [file, importsOf(file, texts.get(file)!)]));

/** Every import cycle, each once (as the path that closes it). */
function cycles(): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      found.push([...path.slice(path.indexOf(file)), file]);
      return;
    }
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
  return found;
}

describe('src/ layout', () => {
  it('every import names a module that exists', () => {
    const missing = [...graph].flatMap(([file, targets]) => targets.filter((t) => !texts.has(t)).map((t) => `${file} -> ${t}`));
    expect(missing).toEqual([]);
  });

  it('every module belongs to a layer', () => {
    expect(files.filter((file) => layerOf(groupOf(file)) < 0)).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles().map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('no import runs back up a layer or across to another group of its layer', () => {
    const wrong = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((target) => {
          const [from, to] = [groupOf(file), groupOf(target)];
          if (from === to) return false;
          const [above, below] = [layerOf(from), layerOf(to)];
          return below < above || (below === above && above !== SHARED);
        })
        .map((target) => `${file} -> ${target}`),
    );
    expect(wrong).toEqual([]);
  });

  // Files are cut by meaning, not by a line count (docs/development.md, "Layout"): what keeps a module
  // small is one concern with a short export surface, named where it is defined. The ceiling is far
  // above any one idea here, so it never splits a parser or a table; it catches a file that grew a second one.
  it(`no module exports more than ${MAX_EXPORTS} names, or any with export *`, () => {
    const wide = files.map((file) => [file, exportedNames(texts.get(file)!)] as const).filter(([, names]) => names.length > MAX_EXPORTS);
    expect(wide.map(([file, names]) => `${file}: ${names.length}`)).toEqual([]);
    expect(files.filter((file) => /^export\s+\*/m.test(code(texts.get(file)!)))).toEqual([]);
  });

  // A re-export hides where a name lives (and kept the pieces of a file split for a count looking like one).
  it('names each export where it is defined: a re-export only where one module must stand for several', () => {
    const reexporting = files.filter((file) => /^export\s+(?:type\s+)?\{[^}]*\}\s*from\s/m.test(code(texts.get(file)!)));
    expect(reexporting.filter((file) => !RE_EXPORTERS.has(file))).toEqual([]);
  });

  it(`no module is over ${MAX_LINES} lines`, () => {
    const long = files.map((file) => [file, texts.get(file)!.split('\n').length - 1] as const).filter(([, lines]) => lines > MAX_LINES);
    expect(long).toEqual([]);
  });

  it('counts exported names as a reader would', () => {
    const sample = ['export const a = 1;', 'export async function b() {}', 'export interface C {}', 'export type D = 1;'];
    sample.push('export class E {}', "export { f, g as h } from './x.js';", "export type { I } from './y.js';", '// export const j = 1;');
    expect(exportedNames(sample.join('\n'))).toEqual(['a', 'b', 'C', 'D', 'E', 'f', 'h', 'I']);
  });

  it("no '/proc' literal outside src/host/: every path on the host comes from the one Host value", () => {
    const literal = /['"`]\/proc(?=[/'"`$])/;
    expect(files.filter((file) => !file.startsWith('host/') && literal.test(code(texts.get(file)!)))).toEqual([]);
  });

  // doctor and pulse are about nvidia-smi itself and may use its folder; the pipeline sees only
  // src/sources/source.ts (what a source gives) and src/sources/sources.ts (which one).
  it('the pipeline does not import from a source folder', () => {
    const pipeline = (file: string) =>
      file === 'commands/collect.ts' ||
      ['collect', 'host/processes', 'publish', 'metrics', 'csvlog', 'exposition', 'collection'].includes(groupOf(file));
    const reaching = [...graph].flatMap(([file, targets]) =>
      pipeline(file) ? targets.filter((t) => /^sources\/[^/]+\//.test(t)).map((t) => `${file} -> ${t}`) : [],
    );
    expect(reaching).toEqual([]);
  });
});

/** Every folder under `dir`, as paths from the repository's root. */
function foldersUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) => [`${dir}/${entry.name}`, ...foldersUnder(`${dir}/${entry.name}`)]);
}

// docs/development.md's "Layout" section is the map a newcomer reads: it must name what is there, and only that.
describe("docs/development.md's layout section", () => {
  const doc = readFileSync(join(ROOT, 'docs/development.md'), 'utf8');
  const start = doc.indexOf('\n## Layout\n');
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
  const named = new Set([...section.matchAll(/\b((?:src|test|bench)(?:\/[\w.-]+)*)\//g)].map((m) => m[1]!));
  const namedModules = new Set([...section.matchAll(/\bsrc\/([\w.-]+\.ts)\b/g)].map((m) => m[1]!));

  it('is there, and names folders', () => {
    expect(start).toBeGreaterThan(0);
    expect(named.size).toBeGreaterThan(10);
  });

  it('names only folders that exist', () => {
    expect([...named].filter((folder) => !(existsSync(join(ROOT, folder)) && statSync(join(ROOT, folder)).isDirectory()))).toEqual([]);
  });

  it('names every folder of src/', () => {
    expect(foldersUnder('src').filter((folder) => !named.has(folder))).toEqual([]);
  });

  it('names every module at the root of src/, and there are at most five', () => {
    const root = readdirSync(SRC).filter((name) => name.endsWith('.ts'));
    expect(root.filter((name) => !namedModules.has(name))).toEqual([]);
    expect([...namedModules].filter((name) => !root.includes(name))).toEqual([]);
    expect(root.length).toBeLessThanOrEqual(5);
  });

  it('no folder says nothing of what it holds', () => {
    // test/fixtures/ holds copies of real hosts (their /usr/lib and all) and is left out.
    const ours = [...foldersUnder('src'), ...foldersUnder('test').filter((folder) => !folder.startsWith('test/fixtures/'))];
    expect(ours.filter((folder) => /^(utils?|common|misc|helpers?)$/.test(folder.split('/').pop()!))).toEqual([]);
  });
});
