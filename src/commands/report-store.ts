import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:fs';
import type { StoreAccess } from '../report/store/client.js';
import { parseDuration } from './duration.js';

// `report --prometheus`'s access options into a StoreAccess: the URL, headers, credentials from a
// file or a variable (never from the command line, where `ps` shows them to every user), a CA file,
// the timeout. Checked here, at the edge: a problem is one line and exit 2 before any request.

/** The options the store's access is made of. */
export interface StoreAccessArgs {
  prometheus: string;
  prometheusHeader?: string[];
  prometheusBearerTokenFile?: string;
  prometheusBasicAuthFile?: string;
  prometheusCaFile?: string;
  prometheusTimeout: string;
  prometheusConcurrency: number;
  hostLabel: string;
}

/** The variables that may carry the credentials instead of a file. */
export const TOKEN_VARIABLE = 'GPU_TEXTFILE_PROMETHEUS_BEARER_TOKEN';
export const BASIC_AUTH_VARIABLE = 'GPU_TEXTFILE_PROMETHEUS_BASIC_AUTH';

/** An answer of the store is refused past this size (a year by hour of 320 GPUs is about 60 MB for the largest question). */
export const MAX_ANSWER_BYTES = 256 * 1_048_576;
/** A secret or CA file is small: past this it is not one. */
const MAX_SECRET_BYTES = 1_048_576;

/**
 * A small file's text, read through links (a Kubernetes secret is a link into `..data/`), but only
 * a regular file, and only so much of it.
 */
function readSecret(path: string): string | { problem: string } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    return { problem: `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}` };
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) return { problem: `${path} is not a regular file` };
    if (info.size > MAX_SECRET_BYTES) return { problem: `${path} is over ${MAX_SECRET_BYTES} bytes: not a token, password or CA file` };
    const buffer = Buffer.alloc(info.size);
    let read = 0;
    while (read < info.size) {
      const n = readSync(fd, buffer, read, info.size - read, read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** A header `Name: value` as given to --prometheus-header. */
function header(text: string): [string, string] | undefined {
  const colon = text.indexOf(':');
  const name = text.slice(0, Math.max(0, colon)).trim();
  const value = text.slice(colon + 1).trim();
  return colon > 0 && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name) && !/[\r\n]/.test(value) ? [name, value] : undefined;
}

/** The store's access from the options and the environment, or the one line saying what is wrong. */
export function storeAccessOf(
  args: StoreAccessArgs,
  env: Readonly<Record<string, string | undefined>>,
): { access: StoreAccess; concurrency: number; hostLabel: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(args.prometheus);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    return { problem: `--prometheus takes the store's URL (http://prometheus:9090, https://mimir/prometheus), not "${args.prometheus}"` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: `--prometheus: ${url.protocol} is not http: or https:` };
  if (url.username || url.password)
    return {
      problem: `--prometheus: no credentials in the URL (the command line is visible to every user): use --prometheus-basic-auth-file or ${BASIC_AUTH_VARIABLE}`,
    };
  const timeoutMs = parseDuration(args.prometheusTimeout);
  if (timeoutMs === undefined || timeoutMs < 100) return { problem: '--prometheus-timeout takes a duration of at least 100ms (30s, 2m)' };
  if (!Number.isInteger(args.prometheusConcurrency) || args.prometheusConcurrency < 1 || args.prometheusConcurrency > 64)
    return { problem: '--prometheus-concurrency takes a whole number from 1 to 64' };
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(args.hostLabel)) return { problem: `--host-label takes a label name, not "${args.hostLabel}"` };
  const headers: Record<string, string> = {};
  for (const text of args.prometheusHeader ?? []) {
    const parsed = header(text);
    if (!parsed) return { problem: `--prometheus-header takes "Name: value" (X-Scope-OrgID: team-a), not "${text}"` };
    headers[parsed[0]] = parsed[1];
  }
  const token = args.prometheusBearerTokenFile === undefined ? env[TOKEN_VARIABLE] : readSecret(args.prometheusBearerTokenFile);
  const basic = args.prometheusBasicAuthFile === undefined ? env[BASIC_AUTH_VARIABLE] : readSecret(args.prometheusBasicAuthFile);
  if (typeof token === 'object') return token;
  if (typeof basic === 'object') return basic;
  if (token !== undefined && basic !== undefined) return { problem: 'a bearer token or basic auth, not both' };
  if (token !== undefined) {
    const value = token.trim();
    if (value === '' || /[\r\n]/.test(value)) return { problem: 'the bearer token is empty or more than one line' };
    headers.Authorization = `Bearer ${value}`;
  }
  if (basic !== undefined) {
    const value = basic.replace(/\r?\n$/, '');
    if (!value.includes(':') || /[\r\n]/.test(value)) return { problem: 'basic auth takes one line "user:password"' };
    headers.Authorization = `Basic ${Buffer.from(value, 'utf8').toString('base64')}`;
  }
  const ca = args.prometheusCaFile === undefined ? undefined : readSecret(args.prometheusCaFile);
  if (typeof ca === 'object') return ca;
  if (ca !== undefined && !ca.includes('-----BEGIN CERTIFICATE-----'))
    return { problem: `${args.prometheusCaFile} holds no PEM certificate` };
  return {
    access: { url, headers, ...(ca !== undefined ? { ca } : {}), timeoutMs, maxBytes: MAX_ANSWER_BYTES },
    concurrency: args.prometheusConcurrency,
    hostLabel: args.hostLabel,
  };
}
