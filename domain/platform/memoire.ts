import { performance } from 'node:perf_hooks';

/**
 * Answers of the database kept in memory for a bounded time: an entry answers for at most `ttlMs` counted from the
 * moment its read began, so a change committed before that read is in it, and one committed after it is seen within
 * `ttlMs` whatever happens. Past `refreshMs` the entry is read again in the background: a busy entry never makes a
 * caller wait. Concurrent reads of one entry are one read. `clear()` forgets everything at once, and a read that
 * began before it is not kept.
 */
export function createMemory<V>(options: { ttlMs: number; refreshMs: number; max: number; now?: () => number }) {
  const now = options.now ?? (() => performance.now());
  const entries = new Map<string, { value: V; readAt: number }>();
  const reading = new Map<string, Promise<V>>();
  let generation = 0;

  function read(key: string, load: () => Promise<V>): Promise<V> {
    const pending = reading.get(key);
    if (pending) return pending;
    const readAt = now();
    const at = generation;
    const promise = load()
      .then((value) => {
        if (at === generation) {
          if (entries.size >= options.max) entries.clear();
          entries.set(key, { value, readAt });
        }
        return value;
      })
      .finally(() => {
        if (reading.get(key) === promise) reading.delete(key);
      });
    reading.set(key, promise);
    return promise;
  }

  return {
    /** The entry while it is fresh enough, else (or when absent) its read. */
    get(key: string, load: () => Promise<V>): V | Promise<V> {
      const hit = entries.get(key);
      if (hit) {
        const age = now() - hit.readAt;
        if (age < options.ttlMs) {
          if (age >= options.refreshMs && !reading.has(key)) read(key, load).catch(() => {});
          return hit.value;
        }
      }
      return read(key, load);
    },
    /** Changes a kept entry in place (what this process just wrote), without making it younger. */
    update(key: string, change: (value: V) => V) {
      const hit = entries.get(key);
      if (hit) hit.value = change(hit.value);
    },
    clear() {
      generation += 1;
      entries.clear();
      reading.clear();
    },
  };
}
