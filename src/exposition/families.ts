/** A metric family ready to render: one HELP, one TYPE, samples with the same label names. */
export interface MetricFamily {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  samples: MetricSample[];
}

export interface MetricSample {
  labels: readonly (readonly [name: string, value: string])[];
  value: number;
}
