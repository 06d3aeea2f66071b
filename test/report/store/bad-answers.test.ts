import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { emptyStore, fakeStore, json } from './fake-store.js';
import { storeClient } from '../../../src/report/store/client.js';
import { freePort } from '../../support/node-exporter.js';
import { runCli, tempDir } from '../../support/helpers.js';

// Every bad answer a store can give, from a small HTTP server of the test's own: one clear line on
// stderr and exit 1, never a report; warnings said, the report still whole; options checked before
// any request (exit 2). The server answers as Prometheus's API does (docs: querying/api).

const report = (url: string, ...more: string[]) =>
  runCli(['report', '--prometheus', url, '--since', '2026-11-01', '--until', '2026-11-02', '--by', 'host', ...more]);

/** One line on stderr, and the exit status. */
const oneLine = (run: { stderr: string; stdout: string; exitCode?: number }, status: number, pattern: RegExp) => {
  expect(run.stdout).toBe('');
  expect(run.stderr.trim().split('\n')).toHaveLength(1);
  expect(run.stderr).toMatch(pattern);
  expect(run.exitCode).toBe(status);
};

describe('report --prometheus: bad answers', () => {
  it('a store that is not there', { timeout: 60_000 }, async () => {
    const port = await freePort();
    oneLine(await report(`http://127.0.0.1:${port}`), 1, /cannot reach http:\/\/127\.0\.0\.1:\d+\/: ECONNREFUSED/);
  });

  it('a store that does not answer in time', { timeout: 60_000 }, async () => {
    const { url } = await fakeStore(() => undefined);
    oneLine(await report(url, '--prometheus-timeout', '500ms'), 1, /cannot reach .*: no answer within 0\.5 s/);
  });

  it.each([401, 403])('HTTP %i: access refused, with where to set credentials', { timeout: 60_000 }, async (status) => {
    const { url } = await fakeStore((_p, _f, _q, res) =>
      json(res, status, { status: 'error', errorType: 'unauthorized', error: 'no org id' }),
    );
    oneLine(await report(url), 1, new RegExp(`refused access \\(HTTP ${status}: no org id\\): check --prometheus-bearer-token-file`));
  });

  it.each([
    [400, 'bad_data', 'parse error at char 7'],
    [422, 'execution', 'exceeded maximum resolution of 11,000 points per timeseries'],
  ])('HTTP %i (%s): the query quoted', { timeout: 60_000 }, async (status, errorType, error) => {
    const { url } = await fakeStore((path, form, req, res) =>
      path.endsWith('/series') ? emptyStore()(path, form, req, res) : json(res, status, { status: 'error', errorType, error }),
    );
    const run = await report(url);
    oneLine(run, 1, /the store refused the query count_over_time\(nvidia_gpu_collector_success\[3600000ms\]\): /);
    expect(run.stderr).toContain(error);
  });

  it('another status (a proxy in front of it): status and the first line of its body', { timeout: 60_000 }, async () => {
    const { url } = await fakeStore((_p, _f, _q, res) => {
      res.writeHead(502);
      res.end('<html>Bad Gateway</html>\nmore');
    });
    oneLine(await report(url), 1, /the store answered HTTP 502: <html>Bad Gateway<\/html>$/m);
  });

  it('an answer that is not the API', { timeout: 60_000 }, async () => {
    const { url } = await fakeStore((_p, _f, _q, res) => {
      res.writeHead(200);
      res.end('It works!');
    });
    oneLine(await report(url), 1, /the store's answer could not be read: not a Prometheus API answer: It works!/);
  });

  it('an answer over the size bound: read no further, refused', { timeout: 60_000 }, async () => {
    let written = 0;
    const { url } = await fakeStore((_p, _f, _q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(65_536, 0x20);
      // Streams until the client hangs up, so a client that read it all would never finish.
      const more = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once('drain', more);
      };
      res.write('{"status":"success","data":{"resultType":"vector","result":[');
      more();
    });
    const client = storeClient({ url: new URL(url), headers: {}, timeoutMs: 30_000, maxBytes: 1_048_576 });
    expect(await client.query('up', Date.UTC(2026, 10, 1))).toEqual({ kind: 'too-large', limitBytes: 1_048_576 });
    expect(written).toBeLessThan(64 * 1_048_576);
  });

  it('a store with none of our series: which names were looked for', { timeout: 60_000 }, async () => {
    const { url } = await fakeStore((path, form, req, res) =>
      path.endsWith('/series') ? json(res, 200, { status: 'success', data: [] }) : emptyStore()(path, form, req, res),
    );
    oneLine(
      await report(url, '--host', 'gpu-7'),
      1,
      /the store has no nvidia_gpu_collector_success or nvidia_gpu_up series of instance="gpu-7" between 2026-11-01T.* \(looked for nvidia_gpu_collector_success\{instance="gpu-7"\}, nvidia_gpu_up\{instance="gpu-7"\}\)/,
    );
  });

  it("the API's warnings are said once each; the report is whole", { timeout: 60_000 }, async () => {
    const { url } = await fakeStore(emptyStore(['partial response: store-2 down']));
    const run = await report(url);
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('summary:');
    expect(run.stderr).toBe('gpu-textfile: the store warns: partial response: store-2 down\ngpu-textfile: no samples match\n');
  });
});

describe('report --prometheus: access', () => {
  it('sends the headers, the bearer token from its file, basic auth from its variable; never more requests at once than asked', {
    timeout: 60_000,
  }, async () => {
    let inFlight = 0;
    let most = 0;
    const store = emptyStore();
    const { url, seen } = await fakeStore((path, form, req, res) => {
      most = Math.max(most, ++inFlight);
      setTimeout(() => {
        inFlight--;
        store(path, form, req, res);
      }, 20);
    });
    const dir = await tempDir();
    await writeFile(join(dir, 'token'), 's3cret\n');
    const withToken = await report(
      url,
      '--prometheus-header',
      'X-Scope-OrgID: team-a',
      '--prometheus-bearer-token-file',
      join(dir, 'token'),
      '--prometheus-concurrency',
      '2',
    );
    expect(withToken.exitCode, withToken.stderr).toBe(0);
    expect(seen.length).toBeGreaterThan(10);
    for (const request of seen) {
      expect(request.headers['x-scope-orgid']).toBe('team-a');
      expect(request.headers.authorization).toBe('Bearer s3cret');
    }
    expect(most).toBe(2);
    seen.length = 0;
    const basic = await runCli(['report', '--prometheus', url, '--since', '2026-11-01', '--until', '2026-11-02'], {
      GPU_TEXTFILE_PROMETHEUS_BASIC_AUTH: 'alice:pa:ss',
    });
    expect(basic.exitCode, basic.stderr).toBe(0);
    expect(seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from('alice:pa:ss').toString('base64')}`);
  });

  it('trusts the CA named by --prometheus-ca-file, and only then', { timeout: 60_000 }, async () => {
    const dir = await tempDir();
    const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
    await execa('openssl', [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ]);
    const { url } = await fakeStore(emptyStore(), { key: await readFile(key, 'utf8'), cert: await readFile(cert, 'utf8') });
    oneLine(await report(url), 1, /cannot reach https:\/\/127\.0\.0\.1:\d+\/: .*(SELF_SIGNED|self-signed)/i);
    const trusted = await report(url, '--prometheus-ca-file', cert);
    expect(trusted.exitCode, trusted.stderr).toBe(0);
  });
});

describe('report --prometheus: options checked before any request (exit 2)', () => {
  it.each([
    [['--prometheus', 'prometheus:9090'], /--prometheus: prometheus: is not http: or https:/],
    [['--prometheus', 'not a url'], /--prometheus takes the store's URL/],
    [['--prometheus', 'http://bob:pw@prom:9090'], /no credentials in the URL/],
    [['--prometheus', 'http://prom:9090', '--prometheus-header', 'no colon'], /--prometheus-header takes "Name: value"/],
    [['--prometheus', 'http://prom:9090', '--prometheus-timeout', 'soon'], /--prometheus-timeout takes a duration/],
    [['--prometheus', 'http://prom:9090', '--prometheus-concurrency', '0'], /--prometheus-concurrency takes a whole number from 1 to 64/],
    [['--prometheus', 'http://prom:9090', '--host-label', 'host-name'], /--host-label takes a label name/],
    [['--prometheus', 'http://prom:9090', '--csv-dir', '/tmp'], /leave out --csv-dir and --demo/],
    [
      ['--prometheus', 'http://prom:9090', '--prometheus-bearer-token-file', '/nonexistent/token'],
      /cannot read \/nonexistent\/token: ENOENT/,
    ],
    [['--prometheus', 'http://prom:9090', '--since', '2026-11-02', '--until', '2026-11-01'], /is not before --until/],
  ])('%j', { timeout: 60_000 }, async (args, pattern) => {
    oneLine(await runCli(['report', ...args]), 2, pattern);
  });
});
