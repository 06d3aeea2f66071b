import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

// The one client of a store's Prometheus HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics):
// `query`, `queryRange` and `series`, each answered as a union; nothing above this file sees JSON
// from the wire. Built on node:http(s) rather than the global fetch: Node 20's fetch takes no CA
// per request without importing undici, and a store behind a private CA is how most are run.

/** How to reach the store: its base URL, the headers every request carries, TLS trust, limits. */
export interface StoreAccess {
  /** The base URL: `/api/v1/...` is added to its path (a Mimir's `/prometheus` prefix stays). */
  url: URL;
  /** Sent with every request: Authorization, X-Scope-OrgID, ... */
  headers: Readonly<Record<string, string>>;
  /** PEM certificates to trust instead of the system's (https only). */
  ca?: string;
  timeoutMs: number;
  /** An answer longer than this is refused, read no further. */
  maxBytes: number;
}

/** One series of an answer: its labels (no `__name__` for computed ones) and its points, epoch ms. */
export interface StoreSeries {
  labels: Readonly<Record<string, string>>;
  points: [time: number, value: number][];
}

/** What one request came to. */
export type StoreOutcome<T> =
  | { kind: 'ok'; data: T; warnings: string[] }
  | { kind: 'unreachable'; url: string; reason: string }
  | { kind: 'http'; status: number; body: string }
  | { kind: 'bad-query'; query: string; message: string }
  | { kind: 'too-large'; limitBytes: number }
  | { kind: 'malformed'; message: string };

/** A body as read: its text, or why it stopped. */
type Body =
  | { kind: 'body'; status: number; text: string }
  | { kind: 'too-large' }
  | { kind: 'failed'; reason: string; staleConnection?: boolean };

/** Reads a response to its end, stopping at `maxBytes` (the store could answer a year of raw samples). */
function readBody(response: IncomingMessage, maxBytes: number): Promise<Body> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    response.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        response.destroy();
        resolve({ kind: 'too-large' });
        return;
      }
      chunks.push(chunk);
    });
    response.on('end', () => resolve({ kind: 'body', status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    response.on('error', (error) => resolve({ kind: 'failed', reason: error.message }));
  });
}

/** The reason a request failed, in a few words: "ECONNREFUSED", "timed out after 10 s". */
function failure(error: Error & { code?: string }, timeoutMs: number): string {
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  return error.code ? `${error.code} (${error.message})` : error.message;
}

/**
 * POSTs a form to `path` under the store's URL (POST: a query can outgrow a URL's length limits).
 * A request sent on a kept-alive connection that the server (or a proxy before it) closed as idle
 * meanwhile fails with ECONNRESET before any answer: it is sent once more on a new connection, as
 * Node's documentation of `reusedSocket` advises. The queries only read, so a second send is safe.
 */
async function post(access: StoreAccess, path: string, form: URLSearchParams): Promise<Body> {
  const first = await postOnce(access, path, form);
  return first.kind === 'failed' && first.staleConnection ? postOnce(access, path, form) : first;
}

function postOnce(access: StoreAccess, path: string, form: URLSearchParams): Promise<Body> {
  const url = new URL(access.url.href.replace(/\/*$/, '') + path);
  const body = form.toString();
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: {
          ...access.headers,
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
          accept: 'application/json',
        },
        signal: AbortSignal.timeout(access.timeoutMs),
        ...(access.ca !== undefined && url.protocol === 'https:' ? { ca: access.ca } : {}),
      },
      (response) => {
        readBody(response, access.maxBytes).then(resolve, (error: Error) => resolve({ kind: 'failed', reason: error.message }));
      },
    );
    req.on('error', (error: Error & { code?: string }) =>
      resolve({
        kind: 'failed',
        reason: failure(error, access.timeoutMs),
        staleConnection: req.reusedSocket && error.code === 'ECONNRESET',
      }),
    );
    req.end(body);
  });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isLabels = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string');

/** A sample value as the API writes it: a string ("12.5", "NaN", "+Inf"). */
const sampleValue = (v: unknown): number | undefined => {
  if (typeof v !== 'string') return undefined;
  const n = v === '+Inf' ? Number.POSITIVE_INFINITY : v === '-Inf' ? Number.NEGATIVE_INFINITY : Number(v);
  return v.trim() === '' || (Number.isNaN(n) && v !== 'NaN') ? undefined : n;
};

/**
 * [seconds, "value"] -> [ms, value], or undefined when it is not one. The parsed pair itself is
 * turned into the point, not copied: an answer at 40 hosts x 30 days holds 230,000 of them, and a
 * second array each doubled what the garbage collector had to do.
 */
function point(v: unknown): [number, number] | undefined {
  if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'number' || !Number.isFinite(v[0])) return undefined;
  const value = sampleValue(v[1]);
  if (value === undefined) return undefined;
  const pair = v as [number, number];
  pair[0] = Math.round(pair[0] * 1000);
  pair[1] = value;
  return pair;
}

/** A vector's or matrix's series, checked item by item: the answer is input like any other. */
function seriesOf(data: unknown): StoreSeries[] | string {
  if (!isObject(data) || !Array.isArray(data.result)) return 'no result in the answer';
  const out: StoreSeries[] = [];
  for (const item of data.result) {
    if (!isObject(item) || !isLabels(item.metric)) return 'a series without labels';
    const raw = data.resultType === 'matrix' ? item.values : data.resultType === 'vector' ? [item.value] : undefined;
    if (!Array.isArray(raw)) return `a result of type ${String(data.resultType)}, not a vector or matrix`;
    const points: [number, number][] = [];
    for (const p of raw) {
      const parsed = point(p);
      if (!parsed) return `a sample that is not [time, "value"]: ${JSON.stringify(p).slice(0, 80)}`;
      points.push(parsed);
    }
    out.push({ labels: item.metric, points });
  }
  return out;
}

/** The first line of a body, bounded: enough to say what a proxy or the store answered. */
const firstLine = (text: string): string => (text.split('\n', 1)[0] ?? '').trim().slice(0, 200);

/** The API's envelope ({status, data, errorType, error, warnings}) opened, its data checked by `parse`. */
function answer<T>(body: Body, access: StoreAccess, query: string, parse: (data: unknown) => T | string): StoreOutcome<T> {
  if (body.kind === 'too-large') return { kind: 'too-large', limitBytes: access.maxBytes };
  if (body.kind === 'failed') return { kind: 'unreachable', url: access.url.href, reason: body.reason };
  let json: unknown;
  try {
    json = JSON.parse(body.text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    json = undefined;
  }
  // Prometheus answers a query it cannot parse with 400 (bad_data) and one it cannot run with 422
  // (execution: too many points, a subquery it refuses): both are the query's fault, not the store's.
  if (isObject(json) && json.status === 'error' && (body.status === 400 || body.status === 422))
    return { kind: 'bad-query', query, message: String(json.error ?? json.errorType ?? 'error') };
  if (body.status !== 200)
    return { kind: 'http', status: body.status, body: firstLine(isObject(json) && json.error ? String(json.error) : body.text) };
  if (!isObject(json) || json.status !== 'success')
    return { kind: 'malformed', message: `not a Prometheus API answer: ${firstLine(body.text)}` };
  const data = parse(json.data);
  if (typeof data === 'string') return { kind: 'malformed', message: data };
  const warnings = Array.isArray(json.warnings) ? json.warnings.map(String) : [];
  return { kind: 'ok', data, warnings };
}

/** Seconds, as the API takes them (ms precision). */
const seconds = (ms: number) => (ms / 1000).toFixed(3);

/** A typed client of one store. */
export interface StoreClient {
  /** An instant query at `time` (epoch ms). */
  query(expr: string, time: number): Promise<StoreOutcome<StoreSeries[]>>;
  /** A range query from `start` to `end` (epoch ms) every `stepMs`. */
  queryRange(expr: string, start: number, end: number, stepMs: number): Promise<StoreOutcome<StoreSeries[]>>;
  /** The series matching any of `matchers` with samples between `start` and `end`: their label sets. */
  series(matchers: readonly string[], start: number, end: number): Promise<StoreOutcome<Record<string, string>[]>>;
}

/** The client of the store `access` names. */
export function storeClient(access: StoreAccess): StoreClient {
  return {
    query: async (expr, time) =>
      answer(await post(access, '/api/v1/query', new URLSearchParams({ query: expr, time: seconds(time) })), access, expr, seriesOf),
    queryRange: async (expr, start, end, stepMs) =>
      answer(
        await post(
          access,
          '/api/v1/query_range',
          // nocache=1: VictoriaMetrics would otherwise shift start and end to multiples of the step.
          new URLSearchParams({ query: expr, start: seconds(start), end: seconds(end), step: seconds(stepMs), nocache: '1' }),
        ),
        access,
        expr,
        seriesOf,
      ),
    series: async (matchers, start, end) => {
      const form = new URLSearchParams({ start: seconds(start), end: seconds(end) });
      for (const m of matchers) form.append('match[]', m);
      return answer(await post(access, '/api/v1/series', form), access, matchers.join(', '), (data) =>
        Array.isArray(data) && data.every(isLabels) ? data : 'the series answer is not a list of label sets',
      );
    },
  };
}

/** One line saying what went wrong, for stderr. */
export function describeOutcome(outcome: Exclude<StoreOutcome<unknown>, { kind: 'ok' }>): string {
  switch (outcome.kind) {
    case 'unreachable':
      return `cannot reach ${outcome.url}: ${outcome.reason}`;
    case 'http':
      return outcome.status === 401 || outcome.status === 403
        ? `the store refused access (HTTP ${outcome.status}${outcome.body ? `: ${outcome.body}` : ''}): check --prometheus-bearer-token-file, --prometheus-basic-auth-file or --prometheus-header`
        : `the store answered HTTP ${outcome.status}${outcome.body ? `: ${outcome.body}` : ''}`;
    case 'bad-query':
      return `the store refused the query ${outcome.query}: ${outcome.message}`;
    case 'too-large':
      return `the store's answer is over ${outcome.limitBytes} bytes: ask for less (--since/--until, --host)`;
    case 'malformed':
      return `the store's answer could not be read: ${outcome.message}`;
  }
}
