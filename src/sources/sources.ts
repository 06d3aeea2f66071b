import { join } from 'node:path';
import type { Host } from '../host/host.js';
import { DEMO_HOSTS, type DemoHostName } from './demo/recordings.js';
import type { BlockingDeadline, Source } from './source.js';
import type { HeadStart } from './nvidia-smi/head-start.js';

/** What the launcher began for a one-shot collect before the CLI loaded (nvidia-smi's calls): passed through to the source. */
export type { HeadStart };

/** What any source may be given: the options of collect that concern reading the GPUs. */
export interface SourceOptions {
  nvidiaSmi: string;
  timeoutMs: number;
  host: Host;
  /** Which recorded host the demo replays. */
  demoHost: DemoHostName;
  /** The NVML library the nvml source loads: a name the loader looks up, or a path. */
  nvmlLibrary: string;
  /** With the nvml source: how far apart a one-shot run's two GPM samples are. */
  gpmWindowMs: number;
  /** With the nvml source: the deadline on its calls, which block this thread (src/collect/watchdog.ts). */
  deadline?: BlockingDeadline;
  /** With the nvidia-smi source, one-shot: the calls the launcher began from the last run's record. */
  headStart?: HeadStart;
}

/**
 * Every source, by name: a source is a sibling folder and one more line here. Each is imported when
 * chosen, so a run initializes only its own (the NVML source never loads the nvidia-smi source's
 * modules); nvidia-smi's and the demo's stay in the bundle.
 */
const SOURCES = {
  'nvidia-smi': async (options: SourceOptions) => {
    const { nvidiaSmiSource } = await import('./nvidia-smi/source.js');
    return nvidiaSmiSource({ command: options.nvidiaSmi, timeoutMs: options.timeoutMs, host: options.host, headStart: options.headStart });
  },
  // The recordings ship beside the bundle (dist/cli.js, dist/demo/): found from it, wherever it is installed.
  demo: async (options: SourceOptions) => {
    const { demoSource } = await import('./demo/source.js');
    return demoSource({ dir: demoDir(), now: Date.now, host: options.demoHost });
  },
  // NVML and koffi's native module load only when chosen: the build makes ./nvml/source a file of its own.
  nvml: async (options: SourceOptions) => {
    const { nvmlSource } = await import('./nvml/source.js');
    return nvmlSource({
      library: options.nvmlLibrary,
      koffiDir: join(__dirname, 'koffi'),
      gpmWindowMs: options.gpmWindowMs,
      deadline: options.deadline,
    });
  },
} satisfies Record<string, (options: SourceOptions) => Source | Promise<Source>>;

export type SourceName = keyof typeof SOURCES;

/** The source collect reads from. */
export const openSource = async (name: SourceName, options: SourceOptions): Promise<Source> => SOURCES[name](options);

/** Every source's name, for --source. */
export const SOURCE_NAMES = Object.keys(SOURCES) as SourceName[];

/** The folder of the demo's recordings: dist/demo, beside the bundle this code runs in. */
export const demoDir = (): string => join(__dirname, 'demo');

export type { DemoHostName };
/** The recorded hosts the demo source can replay (--demo-host). */
export const DEMO_HOST_NAMES = Object.keys(DEMO_HOSTS) as DemoHostName[];
