import { describe, expect, it } from 'vitest';
import { createBufferPool } from '../../../lib/buffer-pool.ts';

describe('the pool of answer bodies', () => {
  it('lends memory in size classes and lends what was given back before making more', () => {
    const pool = createBufferPool({ maxFree: 2 });
    const a = pool.take(14_600);
    expect(a.length).toBe(16_384);
    pool.give(a.buffer);
    const b = pool.take(9_000);
    expect(b.buffer).toBe(a.buffer);
    // Another class, or a buffer the pool did not make, is never mixed in.
    pool.give(Buffer.allocUnsafeSlow(10_000).buffer);
    expect(pool.take(9_000).buffer).not.toBe(a.buffer);
    expect(pool.take(100).length).toBe(4096);
  });

  it('keeps at most maxFree pieces per class and leaves the largest buffers to the collector', () => {
    const pool = createBufferPool({ maxFree: 2 });
    const taken = [pool.take(5000), pool.take(5000), pool.take(5000)];
    for (const t of taken) pool.give(t.buffer);
    const again = [pool.take(5000), pool.take(5000), pool.take(5000)].map((t) => t.buffer);
    expect(again.filter((m) => taken.some((t) => t.buffer === m))).toHaveLength(2);
    const huge = pool.take(3 * 2 ** 20);
    expect(huge.length).toBe(3 * 2 ** 20);
    pool.give(huge.buffer);
    expect(pool.take(3 * 2 ** 20).buffer).not.toBe(huge.buffer);
  });
});
