import type { Failure } from '../../collection.js';
import type { Nvml } from './api.js';
import { bindNvml } from './binding.js';
import { loadKoffi } from './koffi.js';
import { collectionReason, describeReturn } from './return-codes.js';

// NVML opened once per process: the library loaded, the calls bound, nvmlInit_v2 called. A failure
// is not kept: the next collection (the daemon mode's recovery) tries again.

/** Where NVML is found and how. */
export interface NvmlLocation {
  /** The library dlopen() is given: "libnvidia-ml.so.1" (found as the loader finds it) or a path. */
  library: string;
  /** The folder holding koffi's native modules (dist/koffi). */
  koffiDir: string;
}

/** Opens NVML on first use and keeps it open; each call returns the open binding or why there is none. */
export function nvmlOpener(location: NvmlLocation): () => Nvml | Failure {
  let opened: Nvml | undefined;
  return () => {
    if (opened) return opened;
    const result = openNvml(location);
    if ('reason' in result) return result;
    opened = result;
    return opened;
  };
}

function openNvml({ library, koffiDir }: NvmlLocation): Nvml | Failure {
  const koffi = loadKoffi(koffiDir);
  if ('error' in koffi) return { reason: 'internal_error', message: koffi.error };
  let lib: ReturnType<typeof koffi.load>;
  try {
    lib = koffi.load(library);
  } catch (error) {
    // koffi's message carries dlerror()'s: "cannot open shared object file: No such file or directory".
    if (error instanceof Error) return { reason: 'nvml_library_missing', message: `${library} could not be loaded: ${error.message}` };
    throw error;
  }
  const nvml = bindNvml(koffi, lib);
  const rc = nvml.init();
  if (rc !== 0) return { reason: collectionReason(rc), message: `nvmlInit_v2 returned ${describeReturn(rc)}` };
  return nvml;
}
