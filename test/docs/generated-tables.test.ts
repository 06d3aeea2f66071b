import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GENERATED_SECTIONS, regenerate } from '../../src/docs/generated-tables.js';
import { metricCatalog } from '../../src/metrics/metrics-catalog.js';
import { ROOT } from '../support/helpers.js';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

describe('docs', () => {
  it.each(Object.entries(GENERATED_SECTIONS))(
    '%s: its generated sections match the code (npm run docs rewrites them)',
    (path, sections) => {
      const text = read(path);
      const fresh = regenerate(text, sections);
      if (process.env.UPDATE_DOCS === '1') writeFileSync(join(ROOT, path), fresh);
      else expect(text).toBe(fresh);
    },
  );

  it('document every metric, and the README every command', () => {
    const metrics = read('docs/metrics.md');
    for (const { name } of metricCatalog()) expect(metrics).toContain(`\`${name}\``);
    const readme = read('README.md');
    for (const command of ['collect', 'archive', 'report', 'pulse', 'run', 'doctor', 'install', 'uninstall'])
      expect(readme).toMatch(new RegExp(`gpu-textfile ${command}`));
  });

  // A first read: the pitch, the two set-up commands, a table of commands and links; reference is in docs/.
  it('keeps the README short, and every link in it and in docs/ points at a file that exists', () => {
    const readme = read('README.md');
    expect(Buffer.byteLength(readme)).toBeLessThan(12_000);
    const docs = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md'));
    for (const [file, text] of [['README.md', readme], ...docs.map((name) => [`docs/${name}`, read(`docs/${name}`)])] as const) {
      const base = file === 'README.md' ? ROOT : join(ROOT, 'docs');
      for (const [, target] of text.matchAll(/\]\((?!https?:|#)([^)#\s]+)(?:#[^)]*)?\)/g))
        expect([file, target, existsSync(join(base, target!))]).toEqual([file, target, true]);
    }
  });

  // Issue 39: the README linked a "Development" section that did not exist. A link's #anchor must be
  // a heading of the file it names, as GitHub makes the anchor: lower case, punctuation dropped, spaces as -.
  it('every #anchor of a link in the README and docs/ is a heading there', () => {
    const slug = (heading: string) =>
      heading
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replace(/ /g, '-');
    const anchorsOf = (file: string) => new Set([...read(file).matchAll(/^#{1,6} (.+)$/gm)].map(([, heading]) => slug(heading!)));
    const docs = readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md'));
    const broken: string[] = [];
    for (const file of ['README.md', ...docs.map((name) => `docs/${name}`)]) {
      const dir = file === 'README.md' ? '' : 'docs/';
      for (const [, target, anchor] of read(file).matchAll(/\]\((?!https?:)([^)#\s]*)#([^)\s]+)\)/g)) {
        const named = target === '' ? file : join(dir, target!);
        if (named.endsWith('.md') && !anchorsOf(named).has(anchor!)) broken.push(`${file}: ${target}#${anchor}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it(".ci/run runs exactly the README's test command", () => {
    const command = /<!-- test-command -->\n```sh\n(.+)\n```/.exec(read('README.md'))?.[1];
    expect(command).toBeDefined();
    expect(read('.ci/run').split('\n')).toContain(command);
  });
});
