// The calls the NVML source makes, as this code sees them: NVML's return code and what the call
// wrote. binding.ts makes them through koffi; nothing else knows how.

/** A device handle (nvmlDevice_t: an opaque pointer, a BigInt in koffi). */
export type Device = bigint;
/** A GPM sample buffer (nvmlGpmSample_t). */
export type GpmSample = bigint;
/** An event set (nvmlEventSet_t: an opaque pointer). */
export type EventSet = bigint;

/** nvmlEventData_t: the device (its handle), the event's type bit, and its data (for an Xid, the code). */
export interface EventData {
  device: Device;
  eventType: bigint;
  eventData: bigint;
}

/** What a call gave: NVML's return code, and the value when it is NVML_SUCCESS. */
export type Result<T> = { rc: 0; value: T } | { rc: number; value?: undefined };

export interface MemoryInfo {
  total: bigint;
  reserved: bigint;
  free: bigint;
  used: bigint;
}

export interface ProcessInfo {
  pid: number;
  usedGpuMemory: bigint;
}

export interface ProcessUtilization {
  pid: number;
  /** CPU time of the newest sample averaged, in microseconds (koffi: a number, or a BigInt past 2^53). */
  timeStamp: number | bigint;
  smUtil: number;
  memUtil: number;
}

/** The calls the source makes. */
export interface Nvml {
  init(): number;
  driverVersion(): Result<string>;
  /** The CUDA version the driver supports, as NVML encodes it (13010 is 13.1). */
  cudaDriverVersion(): Result<number>;
  count(): Result<number>;
  handle(index: number): Result<Device>;
  text(what: 'uuid' | 'name' | 'serial' | 'vbios' | 'busId', device: Device): Result<string>;
  computeCapability(device: Device): Result<[number, number]>;
  utilization(device: Device): Result<{ gpu: number; memory: number }>;
  codecUtilization(which: 'encoder' | 'decoder', device: Device): Result<number>;
  memory(device: Device): Result<MemoryInfo>;
  /** One-number getters: nvmlDeviceGet<name>(device, unsigned int *). */
  uint(name: UintGetter, device: Device): Result<number>;
  powerLimits(device: Device): Result<[number, number]>;
  temperature(device: Device): Result<number>;
  marginTemperature(device: Device): Result<number>;
  clock(which: 'current' | 'max', type: number, device: Device): Result<number>;
  twoModes(which: 'mig' | 'ecc', device: Device): Result<[number, number]>;
  eventReasons(device: Device): Result<bigint>;
  eccErrors(device: Device, errorType: number, counterType: number): Result<bigint>;
  remappedRows(device: Device): Result<[number, number, number, number]>;
  retiredPages(device: Device, cause: number): Result<number>;
  /** nvmlDeviceGetFieldValues for unsigned int fields: each field's code and value. */
  fieldValues(device: Device, ids: readonly number[]): Result<Result<number>[]>;
  energy(device: Device): Result<bigint>;
  processes(device: Device): Result<ProcessInfo[]>;
  processName(pid: number): Result<string>;
  /** Per-process utilization from samples newer than `since` (CPU time in microseconds; 0n: all the driver keeps). */
  processUtilization(device: Device, since: bigint): Result<ProcessUtilization[]>;
  /** MIG: how many MIG devices this GPU can hold, one by index (NOT_FOUND: none there), a MIG device's instance ids. */
  migCount(device: Device): Result<number>;
  migHandle(device: Device, index: number): Result<Device>;
  instanceId(which: 'gpuInstance' | 'computeInstance', migDevice: Device): Result<number>;
  gpmSupported(device: Device): Result<boolean>;
  gpmAlloc(): Result<GpmSample>;
  gpmTake(device: Device, sample: GpmSample): number;
  /** nvmlGpmMigSampleGet: a sample of one MIG GPU instance, asked of its parent GPU by the GPU instance id. */
  gpmMigTake(device: Device, gpuInstanceId: number, sample: GpmSample): number;
  gpmFree(sample: GpmSample): number;
  gpmMetrics(first: GpmSample, second: GpmSample, ids: readonly number[]): Result<Result<number>[]>;
  pcieThroughput(device: Device, counter: 0 | 1): Result<number>;
  /** nvmlDeviceGetGpuFabricInfo: the fabric's answer for this GPU (nvmlReturn_t) and its state (nvmlGpuFabricState_t). */
  fabric(device: Device): Result<{ status: number; state: number }>;
  eventSetCreate(): Result<EventSet>;
  /** nvmlDeviceRegisterEvents: the return code. */
  registerEvents(device: Device, eventTypes: bigint, set: EventSet): number;
  /** nvmlEventSetWait_v2: the next event, or NVML_ERROR_TIMEOUT when none came within `timeoutMs` (0: none waiting). */
  eventWait(set: EventSet, timeoutMs: number): Result<EventData>;
  eventSetFree(set: EventSet): number;
}

export type UintGetter =
  | 'PowerUsage'
  | 'PowerManagementLimit'
  | 'EnforcedPowerLimit'
  | 'PowerManagementDefaultLimit'
  | 'FanSpeed'
  | 'CurrPcieLinkGeneration'
  | 'MaxPcieLinkGeneration'
  | 'CurrPcieLinkWidth'
  | 'MaxPcieLinkWidth'
  | 'PcieReplayCounter'
  | 'PersistenceMode'
  | 'ComputeMode'
  | 'PerformanceState'
  | 'RetiredPagesPendingStatus';

export const UINT_GETTERS: readonly UintGetter[] = [
  'PowerUsage',
  'PowerManagementLimit',
  'EnforcedPowerLimit',
  'PowerManagementDefaultLimit',
  'FanSpeed',
  'CurrPcieLinkGeneration',
  'MaxPcieLinkGeneration',
  'CurrPcieLinkWidth',
  'MaxPcieLinkWidth',
  'PcieReplayCounter',
  'PersistenceMode',
  'ComputeMode',
  'PerformanceState',
  'RetiredPagesPendingStatus',
];
