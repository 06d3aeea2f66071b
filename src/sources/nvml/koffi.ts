import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type * as Koffi from 'koffi';

// koffi (https://koffi.dev) calls C functions from Node.js. Only its native module is used: it holds
// the whole API, and koffi's JavaScript loader looks for it in node_modules, which the package has
// none of. The build copies koffi.node for linux-x64 and linux-arm64 into dist/koffi/<platform>_<arch>/
// (scripts/build.mjs), and this module is bundled into dist/nvml.js, loaded only by --source nvml.

export type KoffiModule = typeof Koffi;

/** The koffi version the shipped native modules are (package.json pins it). */
export const KOFFI_VERSION = '3.3.4';

/** Where the native module for this machine lies under `dir`. */
export const koffiNativePath = (dir: string, platform = process.platform, arch = process.arch): string =>
  // Absolute: require() takes a bare relative path ("node_modules/...") for a package name.
  resolve(join(dir, `${platform}_${arch}`, 'koffi.node'));

/** koffi's native module from `dir` (dist/koffi), or why it cannot be used here. */
export function loadKoffi(dir: string): KoffiModule | { error: string } {
  const path = koffiNativePath(dir);
  if (!existsSync(path)) return { error: `no koffi native module for ${process.platform}-${process.arch} (${path})` };
  let native: KoffiModule;
  try {
    native = createRequire(__filename)(path) as KoffiModule;
  } catch (error) {
    // dlopen's own words: a wrong architecture, a missing libc symbol.
    if (error instanceof Error) return { error: `koffi's native module did not load: ${error.message}` };
    throw error;
  }
  return native.version === KOFFI_VERSION ? native : { error: `koffi's native module is ${native.version}, expected ${KOFFI_VERSION}` };
}
