import { readHistoryBatches, type BadFile, type OddRows } from '../csvlog/read.js';
import type { SidecarMaker } from '../csvlog/rotate.js';
import type { Sections } from '../csvlog/sidecar.js';
import { segmentFromJson, segmentOf, segmentToJson, type HoursSegment } from './segment.js';

/**
 * The sections the report keeps in an archive's sidecar, and the one loop over the archive's rows
 * that makes them. A section is a part of the report's state over the archive's rows, as plain
 * JSON with a version of its own. To add one (docs/csv.md says the same): give it a name, a maker
 * fed from the loop in `makeSections`, a reader in `readSections` that answers undefined for
 * another version or shape, and use it in build.ts; sidecars written before it lack it, so
 * `current` says they are stale (the next `archive` run rewrites them) and the report reads those
 * archives' rows meanwhile.
 */

/** The sections of one archive, read back. */
export interface ArchiveSections {
  hours: HoursSegment;
}

/** Each section's name in the sidecar. */
const HOURS = 'hours';

/** The sections read back from a sidecar; undefined when one is missing, of another version or of the wrong shape. */
export function readSections(sections: Sections): ArchiveSections | undefined {
  const hours = segmentFromJson(sections[HOURS]);
  return hours === undefined ? undefined : { hours };
}

/** Every section of one archive, from one pass over its rows; undefined when it cannot be read to its end. */
async function makeSections(path: string): Promise<Sections | undefined> {
  const odd: OddRows = { count: 0, examples: [] };
  const bad: BadFile[] = [];
  // The file's name in odd-row examples is the reader's to add: the archive may be read from elsewhere.
  const hours = await segmentOf(readHistoryBatches([{ path, task: '' }], odd, bad), odd);
  if (hours === undefined || bad.length > 0) return undefined;
  const prefix = `${path}: `;
  hours.odd = { count: odd.count, examples: odd.examples.map((e) => (e.startsWith(prefix) ? e.slice(prefix.length) : e)) };
  return { [HOURS]: segmentToJson(hours) };
}

/** What `archive` writes beside each archive. */
export const REPORT_SIDECARS: SidecarMaker = {
  current: (sections) => readSections(sections) !== undefined,
  make: makeSections,
};
