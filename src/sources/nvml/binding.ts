import type { KoffiModule } from './koffi.js';
import { type MemoryInfo, type Nvml, type ProcessUtilization, type Result, UINT_GETTERS, type UintGetter } from './api.js';
import { bindEventCalls } from './event-binding.js';
import { NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INVALID_ARGUMENT } from './return-codes.js';
import { bindMig } from './mig-binding.js';
import { GPM_METRIC_MAX, GPM_METRIC_SIZE, GPM_METRICS_AT, nvmlStructs } from './structs.js';

// The NVML entry points the source calls (api.ts), declared once through koffi with nvml.h's types
// and layouts. Every call returns NVML's code and what it wrote; nothing here throws once bound.

/** nvml.h's buffer sizes (NVML_DEVICE_*_BUFFER_SIZE, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE). */
const TEXT_SIZE = 96;
const PROCESS_ROOM = 256;
/** The most entries a list call grows to: a pid each, far past any GPU's processes (1.5 MiB of process entries). */
const MAX_LIST_ROOM = 65_536;
/** How many calls a list may take to fit: each too-small buffer is followed by one of the size the driver named. */
const LIST_TRIES = 4;

type Fn = (...args: unknown[]) => number;

const ok = <T>(rc: number, value: () => T): Result<T> => (rc === 0 ? { rc: 0, value: value() } : { rc });
const cString = (buffer: Buffer): string => buffer.toString('utf8', 0, Math.max(0, buffer.indexOf(0)));

/** Binds the calls over `lib` (a loaded libnvidia-ml). A function this library lacks answers FUNCTION_NOT_FOUND. */
export function bindNvml(koffi: KoffiModule, lib: ReturnType<KoffiModule['load']>): Nvml {
  const out = (type: string | ReturnType<KoffiModule['struct']>) => koffi.out(koffi.pointer(type as string));
  const fn = (name: string, args: unknown[]): Fn => {
    try {
      return lib.func(name, 'int', args as never) as unknown as Fn;
    } catch (error) {
      // An older driver without this entry point: its fields are absent, as nvidia-smi leaves them.
      if (error instanceof Error && /Cannot find function/.test(error.message)) return () => NVML_ERROR_FUNCTION_NOT_FOUND;
      throw error;
    }
  };
  const uint = out('uint');
  const int = out('int');
  const u64 = out('uint64_t');
  const dev = 'void *';
  const { Utilization, Memory, Pci, Margin, FieldValue, Process, ProcessUtil, GpmSupport } = nvmlStructs(koffi);
  const init = fn('nvmlInit_v2', []);
  const driver = fn('nvmlSystemGetDriverVersion', ['uint8_t *', 'uint']);
  const cudaVersion = fn('nvmlSystemGetCudaDriverVersion_v2', [int]);
  const count = fn('nvmlDeviceGetCount_v2', [uint]);
  const handle = fn('nvmlDeviceGetHandleByIndex_v2', ['uint', out(dev)]);
  const texts = {
    uuid: fn('nvmlDeviceGetUUID', [dev, 'uint8_t *', 'uint']),
    name: fn('nvmlDeviceGetName', [dev, 'uint8_t *', 'uint']),
    serial: fn('nvmlDeviceGetSerial', [dev, 'uint8_t *', 'uint']),
    vbios: fn('nvmlDeviceGetVbiosVersion', [dev, 'uint8_t *', 'uint']),
  };
  const pci = fn('nvmlDeviceGetPciInfo_v3', [dev, out(Pci)]);
  const cc = fn('nvmlDeviceGetCudaComputeCapability', [dev, int, int]);
  // Filled into a buffer kept for the binding and read back by offset: as a koffi struct its object
  // was made and converted back on every call, for each GPU of each sample.
  const utilization = fn('nvmlDeviceGetUtilizationRates', [dev, 'void *']);
  const utilizationAnswer = Buffer.alloc(koffi.sizeof(Utilization));
  const utilizationAt = { gpu: koffi.offsetof(Utilization, 'gpu'), memory: koffi.offsetof(Utilization, 'memory') };
  const codec = {
    encoder: fn('nvmlDeviceGetEncoderUtilization', [dev, uint, uint]),
    decoder: fn('nvmlDeviceGetDecoderUtilization', [dev, uint, uint]),
  };
  // As utilization: a kept buffer, its version set before each call, the counters read by offset.
  const memory = fn('nvmlDeviceGetMemoryInfo_v2', [dev, 'void *']);
  const memoryAnswer = Buffer.alloc(koffi.sizeof(Memory));
  const memoryAt = Object.fromEntries(
    (['version', 'total', 'reserved', 'free', 'used'] as const).map((name) => [name, koffi.offsetof(Memory, name)]),
  ) as Record<'version' | keyof MemoryInfo, number>;
  const uints = Object.fromEntries(UINT_GETTERS.map((name) => [name, fn(`nvmlDeviceGet${name}`, [dev, uint])])) as Record<UintGetter, Fn>;
  const constraints = fn('nvmlDeviceGetPowerManagementLimitConstraints', [dev, uint, uint]);
  const temperature = fn('nvmlDeviceGetTemperature', [dev, 'int', uint]);
  const margin = fn('nvmlDeviceGetMarginTemperature', [dev, koffi.inout(koffi.pointer(Margin))]);
  const clocks = {
    current: fn('nvmlDeviceGetClockInfo', [dev, 'int', uint]),
    max: fn('nvmlDeviceGetMaxClockInfo', [dev, 'int', uint]),
  };
  const modes = { mig: fn('nvmlDeviceGetMigMode', [dev, uint, uint]), ecc: fn('nvmlDeviceGetEccMode', [dev, uint, uint]) };
  const reasons = fn('nvmlDeviceGetCurrentClocksEventReasons', [dev, u64]);
  const ecc = fn('nvmlDeviceGetTotalEccErrors', [dev, 'int', 'int', u64]);
  const remapped = fn('nvmlDeviceGetRemappedRows', [dev, uint, uint, uint, uint]);
  const retired = fn('nvmlDeviceGetRetiredPages', [dev, 'int', koffi.inout(koffi.pointer('uint')), 'void *']);
  const fields = fn('nvmlDeviceGetFieldValues', [dev, 'int', 'void *']);
  const fieldValueAt = {
    size: koffi.sizeof(FieldValue),
    fieldId: koffi.offsetof(FieldValue, 'fieldId'),
    nvmlReturn: koffi.offsetof(FieldValue, 'nvmlReturn'),
    value: koffi.offsetof(FieldValue, 'value'),
  };
  let fieldRequest = Buffer.alloc(0);
  const energy = fn('nvmlDeviceGetTotalEnergyConsumption', [dev, u64]);
  const processes = fn('nvmlDeviceGetComputeRunningProcesses_v3', [dev, koffi.inout(koffi.pointer('uint')), 'void *']);
  const processName = fn('nvmlSystemGetProcessName', ['uint', 'uint8_t *', 'uint']);
  const processUtil = fn('nvmlDeviceGetProcessUtilization', [dev, 'void *', koffi.inout(koffi.pointer('uint')), 'uint64_t']);
  const gpmSupport = fn('nvmlGpmQueryDeviceSupport', [dev, koffi.inout(koffi.pointer(GpmSupport))]);
  const gpmAlloc = fn('nvmlGpmSampleAlloc', [out('void *')]);
  const gpmGet = fn('nvmlGpmSampleGet', [dev, 'void *']);
  const gpmMetrics = fn('nvmlGpmMetricsGet', ['void *']);
  const gpmRequest = Buffer.alloc(GPM_METRICS_AT + GPM_METRIC_MAX * GPM_METRIC_SIZE);
  const pointerValue = (sample: unknown): bigint => (typeof sample === 'bigint' ? sample : BigInt(koffi.address(sample as never)));
  const pcie = fn('nvmlDeviceGetPcieThroughput', [dev, 'int', uint]);
  // nvmlGpuFabricInfo_t: clusterUuid (16 bytes), status (nvmlReturn_t) at 16, cliqueId at 20, state (one byte) at 24.
  const fabric = fn('nvmlDeviceGetGpuFabricInfo', [dev, 'void *']);
  const fabricAnswer = Buffer.alloc(28);

  const textCall = (call: Fn, ...head: unknown[]): Result<string> => {
    const buffer = Buffer.alloc(TEXT_SIZE);
    return ok(call(...head, buffer, TEXT_SIZE), () => cString(buffer));
  };
  /** A call that fills an array of structs: asked with room for `room` (at most PROCESS_ROOM), decoded with koffi. */
  // A list call (processes, their utilization samples) into a buffer of `room` entries: one that is
  // too small is INSUFFICIENT_SIZE with the count the driver needs, asked again with that much room
  // and a little more (processes may start between two calls), a bounded number of times.
  const listCall = <T>(type: unknown, call: (buffer: Buffer, count: number[]) => number, room = PROCESS_ROOM): Result<T[]> => {
    const size = koffi.sizeof(type as never);
    let asked = Math.max(1, Math.min(room, MAX_LIST_ROOM));
    for (let tries = 1; ; tries++) {
      const buffer = Buffer.alloc(size * asked);
      const count = [asked];
      const rc = call(buffer, count);
      if (rc === NVML_ERROR_INSUFFICIENT_SIZE && tries < LIST_TRIES && asked < MAX_LIST_ROOM) {
        const needed = count[0]! > asked ? count[0]! : asked * 2;
        asked = Math.min(MAX_LIST_ROOM, needed + Math.ceil(needed / 8));
        continue;
      }
      return ok(rc, () => Array.from({ length: Math.min(count[0]!, asked) }, (_, i) => koffi.decode(buffer, i * size, type as never) as T));
    }
  };

  let driverVersion: Result<string> | undefined;
  return {
    init: () => init(),
    // The loaded driver's version cannot change under an initialized NVML: asked until it answers, then kept.
    driverVersion: () => (driverVersion?.rc === 0 ? driverVersion : (driverVersion = textCall(driver))),
    cudaDriverVersion: () => {
      const version = [0];
      return ok(cudaVersion(version), () => version[0]!);
    },
    count: () => {
      const n = [0];
      return ok(count(n), () => n[0]!);
    },
    handle: (index) => {
      const device: bigint[] = [0n];
      return ok(handle(index, device), () => device[0]!);
    },
    text: (what, device) => {
      if (what !== 'busId') return textCall(texts[what], device);
      const info: { busId?: number[] } = {};
      return ok(pci(device, info), () => cString(Buffer.from(info.busId ?? [])));
    },
    computeCapability: (device) => {
      const major = [0];
      const minor = [0];
      return ok(cc(device, major, minor), () => [major[0]!, minor[0]!]);
    },
    utilization: (device) => {
      utilizationAnswer.fill(0);
      return ok(utilization(device, utilizationAnswer), () => ({
        gpu: utilizationAnswer.readUInt32LE(utilizationAt.gpu),
        memory: utilizationAnswer.readUInt32LE(utilizationAt.memory),
      }));
    },
    codecUtilization: (which, device) => {
      const value = [0];
      return ok(codec[which](device, value, [0]), () => value[0]!);
    },
    memory: (device) => {
      // nvmlMemory_v2_t: version is NVML_STRUCT_VERSION(Memory, 2), its size with 2 in the top byte.
      memoryAnswer.fill(0);
      memoryAnswer.writeUInt32LE(memoryAnswer.length | (2 << 24), memoryAt.version);
      return ok(memory(device, memoryAnswer), () => ({
        total: memoryAnswer.readBigUInt64LE(memoryAt.total),
        reserved: memoryAnswer.readBigUInt64LE(memoryAt.reserved),
        free: memoryAnswer.readBigUInt64LE(memoryAt.free),
        used: memoryAnswer.readBigUInt64LE(memoryAt.used),
      }));
    },
    uint: (name, device) => {
      const value = [0];
      return ok(uints[name](device, value), () => value[0]!);
    },
    powerLimits: (device) => {
      const min = [0];
      const max = [0];
      return ok(constraints(device, min, max), () => [min[0]!, max[0]!]);
    },
    temperature: (device) => {
      const value = [0];
      return ok(temperature(device, 0, value), () => value[0]!);
    },
    marginTemperature: (device) => {
      const value = { version: koffi.sizeof(Margin) | (1 << 24), marginTemperature: 0 };
      return ok(margin(device, value), () => value.marginTemperature);
    },
    clock: (which, type, device) => {
      const value = [0];
      return ok(clocks[which](device, type, value), () => value[0]!);
    },
    twoModes: (which, device) => {
      const current = [0];
      const pending = [0];
      return ok(modes[which](device, current, pending), () => [current[0]!, pending[0]!]);
    },
    eventReasons: (device) => {
      const value = [0n];
      return ok(reasons(device, value), () => BigInt(value[0]!));
    },
    eccErrors: (device, errorType, counterType) => {
      const value = [0n];
      return ok(ecc(device, errorType, counterType, value), () => BigInt(value[0]!));
    },
    remappedRows: (device) => {
      const [a, b, c, d] = [[0], [0], [0], [0]];
      return ok(remapped(device, a, b, c, d), () => [a[0]!, b[0]!, c[0]!, d[0]!]);
    },
    retiredPages: (device, cause) => {
      // With no room for addresses NVML only counts: INSUFFICIENT_SIZE then means "there are some".
      const count = [0];
      const rc = retired(device, cause, count, null);
      return rc === 7 || rc === 0 ? { rc: 0, value: count[0]! } : { rc };
    },
    fieldValues: (device, ids) => {
      // nvmlFieldValue_t laid out by hand in a buffer kept for the binding (grown when more ids are
      // asked): koffi.encode and decode made an object per id on every call. Only fieldId is set on
      // the way in, every other byte zero, as before.
      const size = fieldValueAt.size;
      if (fieldRequest.length < size * ids.length) fieldRequest = Buffer.alloc(size * ids.length);
      fieldRequest.fill(0);
      for (const [i, fieldId] of ids.entries()) fieldRequest.writeUInt32LE(fieldId, i * size + fieldValueAt.fieldId);
      return ok(fields(device, ids.length, fieldRequest), () =>
        ids.map((_, i) => {
          const rc = fieldRequest.readInt32LE(i * size + fieldValueAt.nvmlReturn);
          // Unsigned int fields: the low 32 bits of the 8-byte union (little-endian).
          return rc === 0 ? { rc: 0, value: fieldRequest.readUInt32LE(i * size + fieldValueAt.value) } : { rc };
        }),
      );
    },
    energy: (device) => {
      const value = [0n];
      return ok(energy(device, value), () => BigInt(value[0]!));
    },
    processes: (device) => listCall<{ pid: number; usedGpuMemory: bigint }>(Process, (buffer, count) => processes(device, count, buffer)),
    processName: (pid) => textCall(processName, pid),
    processUtilization: (device, since) => {
      // As NVML's docs say: NULL first for the size the driver wants (72 on an H200, whatever the
      // number of processes: a smaller buffer is INSUFFICIENT_SIZE), then a buffer of that size.
      const wanted = [0];
      const first = processUtil(device, null, wanted, since);
      if (first !== NVML_ERROR_INSUFFICIENT_SIZE && first !== 0) return { rc: first };
      return listCall<ProcessUtilization>(ProcessUtil, (buffer, count) => processUtil(device, buffer, count, since), wanted[0]);
    },
    ...bindMig(fn, out(dev), uint),
    gpmSupported: (device) => {
      const value = { version: 1, isSupportedDevice: 0 };
      return ok(gpmSupport(device, value), () => value.isSupportedDevice !== 0);
    },
    gpmAlloc: () => {
      const sample: bigint[] = [0n];
      return ok(gpmAlloc(sample), () => sample[0]!);
    },
    gpmTake: (device, sample) => gpmGet(device, sample),
    gpmMetrics: (first, second, ids) => {
      // nvmlGpmMetricsGet_t laid out by hand in one buffer kept for the binding: as a koffi struct its
      // 98 metric slots (each with three strings) were converted to and from JavaScript objects on
      // every call, the largest part of a daemon-mode sample's CPU (profiled).
      if (ids.length > GPM_METRIC_MAX) return { rc: NVML_ERROR_INVALID_ARGUMENT };
      gpmRequest.fill(0);
      gpmRequest.writeUInt32LE(1, 0);
      gpmRequest.writeUInt32LE(ids.length, 4);
      gpmRequest.writeBigUInt64LE(pointerValue(first), 8);
      gpmRequest.writeBigUInt64LE(pointerValue(second), 16);
      for (const [i, id] of ids.entries()) gpmRequest.writeUInt32LE(id, GPM_METRICS_AT + i * GPM_METRIC_SIZE);
      return ok(gpmMetrics(gpmRequest), () =>
        ids.map((_, i) => {
          const at = GPM_METRICS_AT + i * GPM_METRIC_SIZE;
          const rc = gpmRequest.readInt32LE(at + 4);
          return rc === 0 ? { rc: 0, value: gpmRequest.readDoubleLE(at + 8) } : { rc };
        }),
      );
    },
    pcieThroughput: (device, counter) => {
      const value = [0];
      return ok(pcie(device, counter, value), () => value[0]!);
    },
    fabric: (device) => {
      fabricAnswer.fill(0);
      return ok(fabric(device, fabricAnswer), () => ({ status: fabricAnswer.readInt32LE(16), state: fabricAnswer.readUInt8(24) }));
    },
    ...bindEventCalls(fn, out('void *')),
  };
}
