import { join } from 'node:path';
import { checkExposition, checkFamilies, expositionProblems, sameSeries, type LabelsDescription } from '../exposition/check.js';
import { newRenderCache, render, type RenderCache } from '../exposition/render.js';
import { failedCollection, type Collection, type Failure } from '../collection.js';
import type { MetricFamily } from '../exposition/families.js';
import { buildFamilies } from '../metrics/metrics.js';
import type { CompatOutput } from '../compat/compat-file.js';
import { newLabelArrays, type LabelArrays } from '../metrics/metrics-labels.js';
import { publishTextfile, readPrevious, removeTextfile, type TextfileError } from './textfile.js';

export { removeStaleTemps, removeTextfile } from './textfile.js';

/** Where a collection goes. */
export interface PublishTarget {
  textfileDir: string;
  fileName: string;
  /** Print the exposition to `out` instead of writing anything. */
  dryRun: boolean;
  labels: [string, string][];
  csv?: { dir: string; task: string; host: string; knownGpus: () => readonly { gpu: string; uuid: string }[] };
  /** Where --dry-run prints (the NVML watchdog's thread, whose main thread is blocked, writes to fd 1 itself). */
  out: { write(text: string): unknown };
  /** Families written after the collection's (`run`'s job info), without the constant labels. */
  extraFamilies?: () => MetricFamily[];
  /** Kept from one collection to the next by a long-running publisher (newRenderMemo). */
  memo?: RenderMemo;
  /** --compat: the same collection in a peer exporter's names, each in a file of its own (docs/compat.md). */
  compat?: readonly CompatOutput[];
}

/**
 * What the daemon mode keeps between samples so that each series' labels are built, escaped and
 * checked once per run instead of once per sample (a third of a sample's JavaScript on an H200 host).
 */
export interface RenderMemo {
  arrays: LabelArrays;
  /** Each labels array's text and each family's last block (exposition/render.ts). */
  rendered: RenderCache;
  described: WeakMap<object, LabelsDescription>;
  /** The last families that passed the checks: a sample with the very same series is not checked again. */
  checked?: readonly MetricFamily[];
}

export const newRenderMemo = (): RenderMemo => ({ arrays: newLabelArrays(), rendered: newRenderCache(), described: new WeakMap() });

/**
 * Renders a collection, falling back to a health-only file if it breaks a format rule (a bug). The
 * families are always checked; the rendered text too unless `checkText` is false (the daemon
 * mode checks its first text in full, then the families of each sample).
 */
export function renderChecked(
  collection: Collection,
  labels: [string, string][],
  checkText = true,
  extra: readonly MetricFamily[] = [],
  kept?: RenderMemo,
): { text: string; failure?: Failure } {
  const memo = kept ?? newRenderMemo();
  const families = [...buildFamilies(collection, labels, memo.arrays), ...extra];
  // Blocks are kept only by a publisher that renders again (the daemon mode): a one-shot run's would go unused.
  const text = render(families, kept?.rendered);
  const unchanged = memo.checked !== undefined && sameSeries(families, memo.checked);
  const problems = [...(unchanged ? [] : checkFamilies(families, memo.described)), ...(checkText ? expositionProblems(text) : [])];
  if (problems.length === 0) {
    memo.checked = families;
    return { text, failure: collection.health.failure };
  }
  const failure: Failure = { reason: 'internal_error', message: `rendered exposition breaks the format: ${problems[0]}` };
  const fallback = failedCollection(failure, collection.health.durationSeconds, collection.health.lastSuccessSeconds);
  return { text: render(buildFamilies(fallback, labels)), failure };
}

/** The previous file's nvidia_gpu_collector_last_success_timestamp_seconds, carried over on failure. */
export async function previousSuccessSeconds(target: Pick<PublishTarget, 'textfileDir' | 'fileName'>): Promise<number | undefined> {
  const text = readPrevious(target.textfileDir, target.fileName);
  if (text === undefined) return undefined;
  return checkExposition(text).samples.find((s) => s.name === 'nvidia_gpu_collector_last_success_timestamp_seconds')?.value;
}

/**
 * A write that did not complete (a full disk) must not leave the last run's data looking current:
 * the file is replaced once by the health block alone, which is small, saying write_failed; if even
 * that fails, the previous file stays. Returns the one line that says which.
 */
async function afterFailedWrite(error: TextfileError, collection: Collection, target: PublishTarget): Promise<string> {
  const where = join(target.textfileDir, target.fileName);
  if (error.reason !== 'write_failed') return `${error.reason}: ${error.message}; nothing written`;
  const failure: Failure = { reason: 'write_failed', message: error.message };
  const health = failedCollection(failure, collection.health.durationSeconds, await previousSuccessSeconds(target));
  const fallback = publishTextfile(target.textfileDir, target.fileName, render(buildFamilies(health, target.labels)));
  return `write_failed: ${error.message} (${fallback ? `the previous ${where} stays` : `wrote ${where} with the health block only`})`;
}

/**
 * A peer exporter's file: its own name, so that no HELP text of ours meets one of its (node_exporter
 * rejects a family whose HELP differs between files). A collection that breaks a format rule (a bug)
 * gives an empty file, and the line says so. A file that cannot be replaced (a full disk) is removed: the peers' names carry
 * no time of collection, so the last run's values would be served as current (unlink needs no space).
 */
function publishCompat(collection: Collection, target: PublishTarget, output: CompatOutput): string | undefined {
  const families = output.families(collection);
  const text = render(families);
  const problems = [...checkFamilies(families), ...expositionProblems(text)];
  const written = publishTextfile(target.textfileDir, output.fileName, problems.length === 0 ? text : '');
  if (!written)
    return problems.length === 0
      ? undefined
      : `internal_error: ${join(target.textfileDir, output.fileName)} would break the format (${problems[0]}): written empty`;
  if (written.reason !== 'write_failed') return `${written.reason}: ${written.message}`;
  const kept = removeTextfile(target.textfileDir, output.fileName);
  return `${written.reason}: ${written.message} (${kept ? `and ${kept}: its values stay` : 'removed it: its values would be stale'})`;
}

/** What publishing one collection came to. */
export interface Published {
  /** The failure the file reports, if the collection failed. */
  failure?: Failure;
  textfileError?: string;
  csvError?: string;
}

/**
 * The one way a run that ends without a good sample says so (a failure of the source, the NVML
 * watchdog's kill, SIGTERM or SIGINT): every file the target owns, ours and each --compat peer's,
 * is replaced from the same failed collection, so none keeps the last values (the peers' names carry
 * no time of collection). The last success time comes over from our previous file; no CSV row: the
 * trail holds samples, and this is none.
 */
export async function publishFailure(failure: Failure, target: PublishTarget, durationSeconds: number, now: Date): Promise<Published> {
  const collection = failedCollection(failure, durationSeconds, await previousSuccessSeconds(target));
  return publish(collection, { ...target, csv: undefined }, now);
}

/** Publishes one collection: the textfile (or stdout with --dry-run) and the CSV rows. */
export async function publish(collection: Collection, target: PublishTarget, now: Date, checkText = true): Promise<Published> {
  const { text, failure } = renderChecked(collection, target.labels, checkText, target.extraFamilies?.(), target.memo);
  if (target.dryRun) {
    // With --compat a run writes more than one file: each is printed under its name, as head(1)
    // heads several files, in comment lines the text format allows (the peers' names used to be
    // left out without a word).
    const compat = target.compat ?? [];
    if (compat.length === 0) target.out.write(text);
    else
      target.out.write(
        [[target.fileName, text] as const, ...compat.map((output) => [output.fileName, render(output.families(collection))] as const)]
          .map(([fileName, fileText]) => `# ==> ${fileName} <==\n${fileText}`)
          .join(''),
      );
    return { failure };
  }
  const written = publishTextfile(target.textfileDir, target.fileName, text);
  const ownError = written && (await afterFailedWrite(written, collection, target));
  const compatErrors = (target.compat ?? []).map((output) => publishCompat(collection, target, output));
  const textfileError = [ownError, ...compatErrors].filter(Boolean).join('; ') || undefined;
  let csvError: string | undefined;
  if (target.csv) {
    const { appendCsvSample } = await import('../csvlog/append.js');
    csvError = await appendCsvSample(target.csv.dir, target.csv.task, collection, {
      host: target.csv.host,
      now,
      knownGpus: target.csv.knownGpus(),
    });
  }
  return { failure, textfileError, csvError };
}
