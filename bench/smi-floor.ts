// The floor under a one-shot `collect` of the nvidia-smi source: a Node.js program that makes the
// calls collect makes, all at once, and nothing else (no options, lock, state, parsing, rendering or
// writing). bench/side-by-side.mjs bundles it, loads it from a V8 code cache as the launcher loads
// dist/cli.js, and times it beside collect:
//   execa COMMAND CALLS_JSON   each call through runSmi: execa, the orphan guard and the gate, as collect runs them
//   spawn COMMAND CALLS_JSON   each call through node:child_process's spawn alone: what Node.js itself costs
// CALLS_JSON is a JSON array of argv arrays. Exits 0 when every call exited 0.
import { spawn } from 'node:child_process';
import { runSmi } from '../src/sources/nvidia-smi/run.js';

/** One call through a bare spawn, stdout read to its end as execa reads it. */
const spawned = (command: string, args: readonly string[]): Promise<boolean> =>
  new Promise((done) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.resume();
    child.stderr.resume();
    child.once('error', () => done(false));
    child.once('close', (code) => done(code === 0));
  });

/** Runs the calls of argv (mode, command, calls); resolves to the exit status. */
export async function main(argv: readonly string[]): Promise<number> {
  const [mode, command, callsJson] = argv;
  if (command === undefined || callsJson === undefined || (mode !== 'execa' && mode !== 'spawn')) return 2;
  const calls = JSON.parse(callsJson) as string[][];
  const ok =
    mode === 'execa'
      ? (await Promise.all(calls.map((args) => runSmi(command, args, { timeoutMs: 10_000 })))).every((o) => o.kind === 'ok')
      : (await Promise.all(calls.map((args) => spawned(command, args)))).every(Boolean);
  return ok ? 0 : 1;
}
