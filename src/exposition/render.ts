import { escapeHelp, escapeLabelValue, formatValue } from './escape.js';
import type { MetricFamily, MetricSample } from './families.js';

type Labels = MetricSample['labels'];

const renderLabels = (labels: Labels): string =>
  labels.length === 0 ? '' : `{${labels.map(([label, value]) => `${label}="${escapeLabelValue(value)}"`).join(',')}}`;

/** One family's text as last rendered, and the samples it was rendered from. */
interface Block {
  help: string;
  type: MetricFamily['type'];
  samples: readonly MetricSample[];
  text: string;
  /** Each series' `name{labels} ` (by its labels array): written once per run, not once per sample. */
  prefixes: WeakMap<Labels, string>;
}

/**
 * What a long-running publisher keeps from one render to the next: each labels array's text, and
 * each family's last block. A family whose series are the very same labels arrays with the same
 * values (Object.is) as last time is written from its block; any other is rendered again, so a block
 * never stands for values other than those it was made from.
 */
export interface RenderCache {
  labels: WeakMap<Labels, string>;
  blocks: Map<string, Block>;
}

export const newRenderCache = (): RenderCache => ({ labels: new WeakMap(), blocks: new Map() });

const sameSamples = (now: readonly MetricSample[], before: readonly MetricSample[]): boolean => {
  if (now.length !== before.length) return false;
  for (let i = 0; i < now.length; i++) {
    const a = now[i]!;
    const b = before[i]!;
    if (a.labels !== b.labels || !Object.is(a.value, b.value)) return false;
  }
  return true;
};

/**
 * Families -> exposition text. Families without samples are left out. Each labels array is escaped
 * and joined once: most series share their array with the other series of their GPU. With a kept
 * `cache` (the daemon mode, whose series keep their arrays from one collection to the next:
 * metrics.ts), a family whose samples did not change is not rendered again, and each series' name and
 * labels are put together once per run; without one (a one-shot run) nothing is kept beyond this text.
 */
export function render(families: readonly MetricFamily[], cache?: RenderCache): string {
  const labels = cache?.labels ?? new WeakMap<Labels, string>();
  const labelsText = (array: Labels): string => {
    let text = labels.get(array);
    if (text === undefined) labels.set(array, (text = renderLabels(array)));
    return text;
  };
  if (!cache) {
    let text = '';
    for (const family of families) {
      if (family.samples.length === 0) continue;
      text += `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n`;
      for (const sample of family.samples) text += `${family.name}${labelsText(sample.labels)} ${formatValue(sample.value)}\n`;
    }
    return text;
  }
  const parts: string[] = [];
  for (const family of families) {
    if (family.samples.length === 0) continue;
    let block = cache.blocks.get(family.name);
    if (block && block.help === family.help && block.type === family.type && sameSamples(family.samples, block.samples)) {
      parts.push(block.text);
      continue;
    }
    if (!block || block.help !== family.help) {
      block = { help: family.help, type: family.type, samples: [], text: '', prefixes: new WeakMap() };
      cache.blocks.set(family.name, block);
    }
    const { prefixes } = block;
    let text = `# HELP ${family.name} ${escapeHelp(family.help)}\n# TYPE ${family.name} ${family.type}\n`;
    for (const sample of family.samples) {
      let prefix = prefixes.get(sample.labels);
      if (prefix === undefined) prefixes.set(sample.labels, (prefix = `${family.name}${labelsText(sample.labels)} `));
      text += `${prefix}${formatValue(sample.value)}\n`;
    }
    block.type = family.type;
    block.samples = family.samples;
    block.text = text;
    parts.push(text);
  }
  // One flat string: the write encodes it at once instead of first flattening a rope of every piece.
  return parts.join('');
}
