import type { Collection } from '../collection.js';

/**
 * Publishes one collection at a time; while one is being written, only the newest waiting one is
 * kept. A child printing faster than the disk takes them cannot queue collections without bound.
 */
export function latestOnly(write: (collection: Collection) => Promise<void>): {
  publish: (collection: Collection) => Promise<void>;
  idle: () => Promise<void>;
} {
  let waiting: Collection | undefined;
  let running: Promise<void> | undefined;
  const drain = async () => {
    try {
      while (waiting) {
        const next = waiting;
        waiting = undefined;
        await write(next);
      }
    } finally {
      running = undefined;
    }
  };
  return {
    publish: (collection) => {
      waiting = collection;
      running ??= drain();
      return running;
    },
    idle: () => running ?? Promise.resolve(),
  };
}
