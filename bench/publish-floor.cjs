// The floor under publishing one sample: what the kernel and node:fs cost to replace the textfile as
// collect does it (open the directory, a new temp file with O_EXCL, write, fchmod, close, rename,
// close), nothing rendered, every --every ms. CPU of the whole process (getrusage) per write, after a
// 2 s warm-up, as one JSON line (bench/side-by-side.mjs runs it beside the daemons).
// --steps prints each step's mean wall time instead (which one the file system makes dear: on ext4 a
// rename over the old file first allocates the new one's delayed blocks, auto_da_alloc).
//   node bench/publish-floor.cjs --text FILE --dir DIR [--every 250] [--seconds 30] [--steps]
const fs = require('node:fs');

const arg = (name, fallback) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : fallback);
const text = fs.readFileSync(arg('--text'), 'utf8');
const dir = arg('--dir');
const every = Number(arg('--every', 250));
const seconds = Number(arg('--seconds', 30));
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_WRONLY, O_CREAT, O_EXCL, O_NONBLOCK } = fs.constants;
fs.mkdirSync(dir, { recursive: true });

let n = 0;
/** Each step's wall time, summed (--steps). */
const spent = new Map();
const step = process.argv.includes('--steps')
  ? (name, call) => {
      const at = process.hrtime.bigint();
      const result = call();
      spent.set(name, (spent.get(name) ?? 0n) + process.hrtime.bigint() - at);
      return result;
    }
  : (_name, call) => call();
const publishOnce = () => {
  const fd = step('open directory', () => fs.openSync(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK));
  const at = (name) => `/proc/self/fd/${fd}/${name}`;
  const temp = `.nvidia_gpu.prom.${(n++).toString(16).padStart(16, '0')}.tmp`;
  const file = step('open temp', () => fs.openSync(at(temp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o644));
  step('write', () => fs.writeSync(file, text));
  step('fchmod', () => fs.fchmodSync(file, 0o644));
  step('close', () => fs.closeSync(file));
  step('rename', () => fs.renameSync(at(temp), at('nvidia_gpu.prom')));
  step('close directory', () => fs.closeSync(fd));
};
const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};
const started = Date.now();
let from;
let writes = 0;
const tick = () => {
  publishOnce();
  if (from === undefined && Date.now() - started >= 2000) from = cpu();
  else if (from !== undefined) writes++;
  if (Date.now() - started < 2000 + seconds * 1000) setTimeout(tick, every);
  else {
    const steps = Object.fromEntries([...spent].map(([name, ns]) => [name, Number(ns / BigInt(n)) / 1000]));
    console.log(
      JSON.stringify({
        every,
        bytes: Buffer.byteLength(text),
        writes,
        msPerWrite: (cpu() - from) / writes,
        ...(spent.size ? { usPerStep: steps } : {}),
      }),
    );
  }
};
tick();
