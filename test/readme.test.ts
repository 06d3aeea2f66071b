import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { regenerate } from '../src/docs/readme-tables.js';
import { metricCatalog } from '../src/metrics.js';
import { ROOT } from './helpers.js';

const path = `${ROOT}/README.md`;

describe('README', () => {
  it('its generated sections match the code (npm run readme rewrites them)', () => {
    const readme = readFileSync(path, 'utf8');
    const fresh = regenerate(readme);
    if (process.env.UPDATE_README === '1') writeFileSync(path, fresh);
    else expect(readme).toBe(fresh);
  });

  it('documents every metric and every command', () => {
    const readme = readFileSync(path, 'utf8');
    for (const { name } of metricCatalog()) expect(readme).toContain(`\`${name}\``);
    for (const command of ['collect', 'archive', 'report', 'pulse', 'doctor', 'install', 'uninstall']) expect(readme).toMatch(new RegExp(`gpu-textfile ${command}`));
  });

  it('.ci/run runs exactly the README\'s test command', () => {
    const readme = readFileSync(path, 'utf8');
    const ci = readFileSync(`${ROOT}/.ci/run`, 'utf8');
    const command = /<!-- test-command -->\n```sh\n(.+)\n```/.exec(readme)?.[1];
    expect(command).toBeDefined();
    expect(ci.split('\n')).toContain(command);
  });
});
