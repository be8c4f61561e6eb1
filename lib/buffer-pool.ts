// Size classes: powers of two from 4 KiB to 1 MiB. Smaller buffers come from Node's own pool; larger ones are rare.
const MIN_CLASS = 4096;
const MAX_CLASS = 2 ** 20;

/**
 * Memory given back once its bytes have left, for the next answers. V8 starts a full garbage collection for each
 * 64 MB of buffers allocated: a new buffer for every answer made it one every second or two under load, each costing
 * about half a second of marking on the helper threads of this 2-core machine. Memory comes in size classes; at most
 * `maxFree` pieces wait in each class, and memory never given back is left to the collector as any buffer.
 */
export function createBufferPool({ maxFree = 256 } = {}) {
  const free = new Map<number, ArrayBuffer[]>();
  return {
    /** A buffer of at least `size` bytes, its contents left as they were. */
    take(size: number): Buffer {
      if (size > MAX_CLASS) return Buffer.allocUnsafeSlow(size);
      const sizeClass = Math.max(MIN_CLASS, 2 ** Math.ceil(Math.log2(size)));
      const memory = free.get(sizeClass)?.pop();
      return memory ? Buffer.from(memory) : Buffer.allocUnsafeSlow(sizeClass);
    },
    /** Gives back the memory of a buffer `take` gave: nothing may read or write it any more. */
    give(memory: ArrayBufferLike) {
      const sizeClass = memory.byteLength;
      if (!(memory instanceof ArrayBuffer) || sizeClass < MIN_CLASS || sizeClass > MAX_CLASS) return;
      if (2 ** Math.round(Math.log2(sizeClass)) !== sizeClass) return;
      let list = free.get(sizeClass);
      if (!list) free.set(sizeClass, (list = []));
      if (list.length < maxFree) list.push(memory);
    },
  };
}

export type BufferPool = ReturnType<typeof createBufferPool>;
