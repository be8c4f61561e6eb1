/**
 * The organisation's per-minute rate, as a fixed window per calendar minute. Counted in this process's memory: it
 * costs no round trip on the hot path; with several api instances behind a balancer, each counts its own share
 * (documented in the OpenAPI description).
 */
export function createRateLimiter(now: () => number = Date.now) {
  const windows = new Map<string, { minute: number; count: number }>();
  return {
    /** Counts one call; `allowed` false once the quota of the current minute is spent. */
    hit(organisationId: string, quota: number) {
      const t = now();
      const minute = Math.floor(t / 60_000);
      let w = windows.get(organisationId);
      if (!w || w.minute !== minute) {
        if (windows.size > 100_000) windows.clear();
        w = { minute, count: 0 };
        windows.set(organisationId, w);
      }
      const allowed = w.count < quota;
      if (allowed) w.count += 1;
      return {
        allowed,
        limit: quota,
        remaining: Math.max(0, quota - w.count),
        resetS: Math.max(1, Math.ceil(((minute + 1) * 60_000 - t) / 1000)),
      };
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
export type RateState = ReturnType<RateLimiter['hit']>;
