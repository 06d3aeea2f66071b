import type { KoffiModule } from './koffi.js';

// nvml.h's structures the source passes, laid out for koffi (field order and types as in nvml.h).

/** NVML_GPM_METRIC_MAX: nvmlGpmMetricsGet_t always has room for this many metrics. */
export const GPM_METRIC_MAX = 98;
/**
 * nvmlGpmMetricsGet_t's layout on 64-bit Linux (nvml.h): version and numMetrics (uint32 each), the two
 * sample pointers, then the metrics at byte 24, each nvmlGpmMetric_t 40 bytes: metricId (uint32),
 * nvmlReturn (int32), value (double at +8), three string pointers.
 */
export const GPM_METRICS_AT = 24;
export const GPM_METRIC_SIZE = 40;

/** The structure types, made for one koffi module (anonymous: binding twice in one process is fine). */
export function nvmlStructs(koffi: KoffiModule) {
  const Utilization = koffi.struct({ gpu: 'uint', memory: 'uint' });
  const Memory = koffi.struct({ version: 'uint', total: 'uint64_t', reserved: 'uint64_t', free: 'uint64_t', used: 'uint64_t' });
  const Pci = koffi.struct({
    busIdLegacy: koffi.array('char', 16, 'Array'),
    domain: 'uint',
    bus: 'uint',
    device: 'uint',
    pciDeviceId: 'uint',
    pciSubSystemId: 'uint',
    busId: koffi.array('uint8_t', 32, 'Array'),
  });
  const Margin = koffi.struct({ version: 'uint', marginTemperature: 'int' });
  const FieldValue = koffi.struct({
    fieldId: 'uint',
    scopeId: 'uint',
    timestamp: 'int64_t',
    latencyUsec: 'int64_t',
    valueType: 'int',
    nvmlReturn: 'int',
    value: 'uint64_t',
  });
  const Process = koffi.struct({ pid: 'uint', usedGpuMemory: 'uint64_t', gpuInstanceId: 'uint', computeInstanceId: 'uint' });
  const ProcessUtil = koffi.struct({
    pid: 'uint',
    timeStamp: 'uint64_t',
    smUtil: 'uint',
    memUtil: 'uint',
    encUtil: 'uint',
    decUtil: 'uint',
  });
  const GpmSupport = koffi.struct({ version: 'uint', isSupportedDevice: 'uint' });

  return { Utilization, Memory, Pci, Margin, FieldValue, Process, ProcessUtil, GpmSupport };
}
