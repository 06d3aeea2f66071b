#!/usr/bin/env node
// Asks the real libnvidia-ml what the per-process utilization and MIG calls return, raw: every return
// code and value, one JSON line per call, so a recording shows exactly what the driver said. Read-only:
// no setting is changed (MIG mode is only read).
//   node bench/nvml-process-mig-probe.mjs KOFFI_DIR SECONDS [--library PATH]
// KOFFI_DIR holds <platform>_<arch>/koffi.node (dist/koffi). For SECONDS it reads each GPU's per-process
// utilization once a second, three ways: the legacy call with lastSeenTimeStamp 0, the legacy call with
// the newest timestamp it returned before, and nvmlDeviceGetProcessesUtilizationInfo.
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';

const [koffiDir = 'dist/koffi', secondsArg = '10'] = process.argv.slice(2);
const library = process.argv.includes('--library') ? process.argv[process.argv.indexOf('--library') + 1] : 'libnvidia-ml.so.1';
const koffi = createRequire(import.meta.url)(resolve(join(koffiDir, `${process.platform}_${process.arch}`, 'koffi.node')));
const lib = koffi.load(library);
const fn = (name, args) => {
  try {
    return lib.func(name, 'int', args);
  } catch (error) {
    if (error instanceof Error && /Cannot find function/.test(error.message)) return () => 'FUNCTION_NOT_FOUND';
    throw error;
  }
};
const say = (call, fields) =>
  console.log(JSON.stringify({ t: Date.now(), call, ...fields }, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
const out = (type) => koffi.out(koffi.pointer(type));
const inout = (type) => koffi.inout(koffi.pointer(type));

const Sample = koffi.struct({ pid: 'uint', timeStamp: 'uint64_t', smUtil: 'uint', memUtil: 'uint', encUtil: 'uint', decUtil: 'uint' });
const Info = koffi.struct({
  timeStamp: 'uint64_t',
  pid: 'uint',
  smUtil: 'uint',
  memUtil: 'uint',
  encUtil: 'uint',
  decUtil: 'uint',
  jpgUtil: 'uint',
  ofaUtil: 'uint',
});
const Process = koffi.struct({ pid: 'uint', usedGpuMemory: 'uint64_t', gpuInstanceId: 'uint', computeInstanceId: 'uint' });
const Memory = koffi.struct({ version: 'uint', total: 'uint64_t', reserved: 'uint64_t', free: 'uint64_t', used: 'uint64_t' });

const init = fn('nvmlInit_v2', []);
const count = fn('nvmlDeviceGetCount_v2', [out('uint')]);
const handle = fn('nvmlDeviceGetHandleByIndex_v2', ['uint', out('void *')]);
const uuid = fn('nvmlDeviceGetUUID', ['void *', 'uint8_t *', 'uint']);
const name = fn('nvmlDeviceGetName', ['void *', 'uint8_t *', 'uint']);
const migMode = fn('nvmlDeviceGetMigMode', ['void *', out('uint'), out('uint')]);
const maxMig = fn('nvmlDeviceGetMaxMigDeviceCount', ['void *', out('uint')]);
const migHandle = fn('nvmlDeviceGetMigDeviceHandleByIndex', ['void *', 'uint', out('void *')]);
const isMig = fn('nvmlDeviceIsMigDeviceHandle', ['void *', out('uint')]);
const giId = fn('nvmlDeviceGetGpuInstanceId', ['void *', out('uint')]);
const ciId = fn('nvmlDeviceGetComputeInstanceId', ['void *', out('uint')]);
const memory = fn('nvmlDeviceGetMemoryInfo_v2', ['void *', inout(Memory)]);
const processes = fn('nvmlDeviceGetComputeRunningProcesses_v3', ['void *', inout('uint'), 'void *']);
const processUtil = fn('nvmlDeviceGetProcessUtilization', ['void *', 'void *', inout('uint'), 'uint64_t']);
const processesUtil = fn('nvmlDeviceGetProcessesUtilizationInfo', ['void *', 'void *']);

const text = (call, device) => {
  const buffer = Buffer.alloc(96);
  const rc = call(device, buffer, 96);
  return { rc, value: buffer.toString('utf8', 0, Math.max(0, buffer.indexOf(0))) };
};
const one = (call, ...head) => {
  const value = [0];
  return { rc: call(...head, value), value: value[0] };
};
const decodeAll = (buffer, type, n) => Array.from({ length: n }, (_, i) => koffi.decode(buffer, i * koffi.sizeof(type), type));

/** The legacy call as NVML's docs say: NULL first for the count, then a buffer of that size. */
function legacy(device, since) {
  const asked = [0];
  const first = processUtil(device, null, asked, since);
  const room = Math.max(asked[0], 1);
  const buffer = Buffer.alloc(koffi.sizeof(Sample) * room);
  const n = [room];
  const rc = processUtil(device, buffer, n, since);
  return { nullRc: first, nullCount: asked[0], rc, count: n[0], samples: rc === 0 ? decodeAll(buffer, Sample, Math.min(n[0], room)) : [] };
}
/** The same with room for 64 samples at once (what the binding did). */
function legacyBig(device, since) {
  const buffer = Buffer.alloc(koffi.sizeof(Sample) * 64);
  const n = [64];
  const rc = processUtil(device, buffer, n, since);
  return { rc, count: n[0], samples: rc === 0 ? decodeAll(buffer, Sample, Math.min(n[0], 64)) : [] };
}
/** nvmlDeviceGetProcessesUtilizationInfo with nvmlProcessesUtilizationInfo_v1_t laid out by hand. */
function infoCall(device, since) {
  const head = Buffer.alloc(24);
  head.writeUInt32LE(24 | (1 << 24), 0);
  head.writeUInt32LE(0, 4);
  head.writeBigUInt64LE(since, 8);
  const nullRc = processesUtil(device, head);
  const asked = head.readUInt32LE(4);
  const room = Math.max(asked, 1);
  const array = Buffer.alloc(koffi.sizeof(Info) * room);
  head.writeUInt32LE(room, 4);
  head.writeBigUInt64LE(BigInt(koffi.address(array)), 16);
  const rc = processesUtil(device, head);
  const n = head.readUInt32LE(4);
  return { nullRc, nullCount: asked, rc, count: n, samples: rc === 0 ? decodeAll(array, Info, Math.min(n, room)) : [] };
}

say('nvmlInit_v2', { rc: init() });
const n = one(count);
say('nvmlDeviceGetCount_v2', n);
const devices = [];
for (let i = 0; i < (n.value ?? 0); i++) {
  const h = [null];
  const rc = handle(i, h);
  say('nvmlDeviceGetHandleByIndex_v2', { gpu: i, rc });
  if (rc !== 0) continue;
  const device = h[0];
  devices.push({ i, device, lastSeen: 0n });
  say('nvmlDeviceGetUUID', { gpu: i, ...text(uuid, device) });
  say('nvmlDeviceGetName', { gpu: i, ...text(name, device) });
  const cur = [0];
  const pend = [0];
  say('nvmlDeviceGetMigMode', { gpu: i, rc: migMode(device, cur, pend), current: cur[0], pending: pend[0] });
  say('nvmlDeviceGetMaxMigDeviceCount', { gpu: i, ...one(maxMig, device) });
  say('nvmlDeviceIsMigDeviceHandle', { gpu: i, ...one(isMig, device) });
  const mh = [null];
  say('nvmlDeviceGetMigDeviceHandleByIndex', { gpu: i, index: 0, rc: migHandle(device, 0, mh) });
  say('nvmlDeviceGetGpuInstanceId', { gpu: i, ...one(giId, device) });
  say('nvmlDeviceGetComputeInstanceId', { gpu: i, ...one(ciId, device) });
  const mem = { version: koffi.sizeof(Memory) | (2 << 24), total: 0n, reserved: 0n, free: 0n, used: 0n };
  say('nvmlDeviceGetMemoryInfo_v2', { gpu: i, rc: memory(device, mem), ...mem });
}

const end = Date.now() + Number(secondsArg) * 1000;
while (Date.now() < end) {
  for (const d of devices) {
    const room = [64];
    const buffer = Buffer.alloc(koffi.sizeof(Process) * 64);
    const rc = processes(d.device, room, buffer);
    say('nvmlDeviceGetComputeRunningProcesses_v3', { gpu: d.i, rc, processes: rc === 0 ? decodeAll(buffer, Process, room[0]) : [] });
    say('nvmlDeviceGetProcessUtilization(NULL first, since 0)', { gpu: d.i, ...legacy(d.device, 0n) });
    say('nvmlDeviceGetProcessUtilization(room 64, since 0)', { gpu: d.i, ...legacyBig(d.device, 0n) });
    const since = legacy(d.device, d.lastSeen);
    say('nvmlDeviceGetProcessUtilization(NULL first, since last)', { gpu: d.i, since: d.lastSeen, ...since });
    for (const s of since.samples) if (BigInt(s.timeStamp) > d.lastSeen) d.lastSeen = BigInt(s.timeStamp);
    say('nvmlDeviceGetProcessesUtilizationInfo(since 0)', { gpu: d.i, ...infoCall(d.device, 0n) });
  }
  await new Promise((resolve) => setTimeout(resolve, 1000));
}
