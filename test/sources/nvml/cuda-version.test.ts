import { expect, it } from 'vitest';
import { cudaVersionText } from '../../../src/sources/nvml/source.js';

// nvmlSystemGetCudaDriverVersion_v2 encodes major x 1000 + minor x 10; nvidia-smi prints "13.1".
it.each([
  [{ rc: 0, value: 13010 }, '13.1'],
  [{ rc: 0, value: 12020 }, '12.2'],
  [{ rc: 0, value: 13000 }, '13.0'],
  [{ rc: 0, value: 0 }, ''],
  [{ rc: 3 }, ''],
  [{ rc: 13 }, ''],
])("NVML's CUDA version %j reads %j", (result, text) => expect(cudaVersionText(result)).toBe(text));
