// The floor under collect's one-shot on a GPU host (issue 41's table, bench/one-shot.mjs): the bundled
// Node.js doing only what any Node.js one-shot must, starting collect's two nvidia-smi calls at once,
// reading their answers, writing them to a temp file and renaming it into place. No guard, no option,
// state or lock, no parsing, no checks: what collect takes above this is its own.
//   node bench/one-shot-floor.cjs DIR CALLS_JSON    (CALLS_JSON: [[arg, ...], [arg, ...]], nvidia-smi's argv of each call)
const { spawn } = require('node:child_process');
const { renameSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const [dir, calls] = [process.argv[2], JSON.parse(process.argv[3])];
const run = (args) =>
  new Promise((resolve, reject) => {
    const child = spawn('nvidia-smi', args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env: { ...process.env, LC_ALL: 'C' } });
    const chunks = [];
    child.stdout.on('data', (chunk) => chunks.push(chunk));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(Buffer.concat(chunks).toString()) : reject(new Error(`nvidia-smi exited ${code}`)),
    );
  });
Promise.all(calls.map(run)).then((answers) => {
  const temp = join(dir, '.floor.prom.tmp');
  writeFileSync(temp, answers.join('\n'), { mode: 0o644 });
  renameSync(temp, join(dir, 'floor.prom'));
});
