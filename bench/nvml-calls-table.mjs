// Times each NVML call the nvml source makes (bench/nvml-calls.mjs through dist/nvml.js; bench/nvml-probe.ts).
import { performance } from 'node:perf_hooks';

/** Prints a markdown table: each call RUNS times per GPU, median and p90 in ms, its last return code. */
export function timeCalls(nvml, runs) {
  const count = nvml.count().value ?? 0;
  const devices = Array.from({ length: count }, (_, i) => nvml.handle(i).value);
  const stats = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return { median: s[Math.floor(s.length / 2)], p90: s[Math.min(s.length - 1, Math.floor(s.length * 0.9))] };
  };
  const gpm = devices.map((device) => {
    const a = nvml.gpmAlloc().value;
    const b = nvml.gpmAlloc().value;
    if (a !== undefined) nvml.gpmTake(device, a);
    return { a, b };
  });
  const CALLS = {
    'utilization + memory + power + temperature + SM clock (the common five)': (d) => {
      nvml.utilization(d);
      nvml.memory(d);
      nvml.uint('PowerUsage', d);
      nvml.temperature(d);
      return nvml.clock('current', 1, d).rc;
    },
    'field values (memory temperature, instant power, recovery action)': (d) => nvml.fieldValues(d, [82, 186, 230]).rc,
    'clock event reasons': (d) => nvml.eventReasons(d).rc,
    'ECC error counters (4 calls)': (d) => [0, 1].flatMap((e) => [0, 1].map((c) => nvml.eccErrors(d, e, c).rc))[0],
    'remapped rows': (d) => nvml.remappedRows(d).rc,
    'energy counter': (d) => nvml.energy(d).rc,
    'PCIe replay counter': (d) => nvml.uint('PcieReplayCounter', d).rc,
    'GPM sample + metrics (4 metrics)': (d, i) => {
      const { a, b } = gpm[i];
      if (a === undefined || b === undefined) return 3;
      nvml.gpmTake(d, b);
      const rc = nvml.gpmMetrics(a, b, [2, 3, 5, 10]).rc;
      gpm[i] = { a: b, b: a };
      return rc;
    },
    'compute processes (+ names)': (d) => {
      const p = nvml.processes(d);
      for (const one of p.value ?? []) nvml.processName(one.pid);
      return p.rc;
    },
    'per-process utilization': (d) => nvml.processUtilization(d, 0n).rc,
    'PCIe throughput (TX + RX)': (d) => nvml.pcieThroughput(d, 0).rc || nvml.pcieThroughput(d, 1).rc,
  };
  console.log('| NVML call, per GPU | median ms | p90 ms | return code |');
  console.log('|---|---|---|---|');
  for (const [label, call] of Object.entries(CALLS)) {
    const times = [];
    let rc = 0;
    const n = label.startsWith('PCIe throughput') ? Math.min(runs, 10) : runs;
    for (let r = 0; r < n; r++)
      devices.forEach((device, i) => {
        const start = performance.now();
        rc = call(device, i);
        times.push(performance.now() - start);
      });
    const { median, p90 } = stats(times);
    console.log(`| ${label} | ${median.toFixed(3)} | ${p90.toFixed(3)} | ${rc} |`);
  }
}
