// What every start of the program does around the CLI's main(), whichever way its code was loaded:
// from dist/cli.js (src/launch/main.ts) or from the packaged program's startup snapshot
// (src/launch/snapshot.ts). Run at start, never at snapshot time: it installs listeners on this
// process and reads its arguments.

import type { HeadStart } from '../sources/nvidia-smi/head-start.js';

/** The CLI bundle's one export the launcher calls; `headStart`: collect's calls started already. */
export type Cli = { main: (args: readonly string[], headStart?: HeadStart) => Promise<number> };

/** The CLI, loaded, and what to do after a run that succeeded (keep the code cache). */
export type Loaded = { cli: Cli; save: () => void };

/**
 * Runs the command `args` names with the CLI `load` gives, called once the listeners below are in
 * place; `headStart` (collect's nvidia-smi calls, begun from the last run's record) comes just before.
 */
export function start(args: readonly string[], load: () => Loaded, headStart: () => HeadStart | undefined = () => undefined): void {
  // Node opens its inspector, a debugger on 127.0.0.1:9229, on SIGUSR1 unless a listener is installed:
  // any local user could then attach to a process that runs as root. No command of ours ever listens
  // for a debugger, so a listener comes first, for every command (run adds its own: the job gets it).
  process.on('SIGUSR1', () => {});

  // A reader that went away (`gpu-textfile install --dry-run | head -1`) is no error worth a stack
  // trace: stop quietly, as other commands in a pipeline do. Not `run`: it passes the broken pipe on
  // to its job (src/run/job.ts), and the job's exit status is still its own.
  // The streams made so far: what the end below waits for.
  const made: NodeJS.WriteStream[] = [];
  if (args[0] !== 'run') {
    for (const name of ['stdout', 'stderr'] as const) {
      whenMade<NodeJS.WriteStream>(process, name, (stream) => {
        made.push(stream);
        stream.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code !== 'EPIPE') throw error;
          process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
        });
      });
    }
  }
  // Before the CLI loads: the calls run while it does (src/sources/nvidia-smi/head-start.ts).
  const early = headStart();
  const { cli, save } = load();
  void cli.main(args, early).then((status) => {
    // Calls the run did not take over (it stopped early, or would have started others) end now.
    early?.drop();
    process.exitCode = status;
    // Only a collect that succeeded ran the path the next runs take.
    if (status === 0) save();
    // The timer's collect ends here: every file it owns is written, synchronously, before main()
    // resolves. Node's own teardown after that (its heap, its handles) took 2 to 3 ms of each run on
    // an H200 host (issue 41); exiting skips it, unless something printed is still on its way: a
    // pipe or a socket (the journal) takes what fits at once and the rest later, which an exit now
    // would cut off (`collect --dry-run --compat | slow-reader`). Other commands end as Node ends them.
    if (args[0] === 'collect' && made.every((stream) => stream.writableLength === 0)) process.exit(status);
  });
}

/**
 * Calls `attach` with `owner[name]` once it is made: process.stdout and process.stderr are made by
 * Node.js on first use. The timer's collect writes to neither and so never makes them (about 1 ms of
 * a one-shot run with the journal's socket as both, issue 41: Node's stream code itself is loaded
 * all the same, for the pipes to nvidia-smi). Where the property is no longer made on demand (made
 * already, or a Node.js that defines it otherwise), `attach` is called at once.
 */
export function whenMade<T>(owner: object, name: string, attach: (made: T) => void): void {
  const property = Object.getOwnPropertyDescriptor(owner, name);
  const make = property?.get;
  if (!make || !property.configurable) {
    attach((owner as Record<string, T>)[name]!);
    return;
  }
  let made: { value: T } | undefined;
  Object.defineProperty(owner, name, {
    configurable: true,
    enumerable: property.enumerable,
    get: () => {
      if (made) return made.value;
      made = { value: make.call(owner) as T };
      attach(made.value);
      return made.value;
    },
  });
}
