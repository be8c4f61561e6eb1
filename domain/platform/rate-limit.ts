import type { Queryable } from '../../db/client.ts';

export interface RateState {
  allowed: boolean;
  limit: number;
  /** Calls of the minute still to be had, as far as this instance knows. */
  remaining: number;
  resetS: number;
}

interface Window {
  minute: number;
  quota: number;
  /** Calls taken from the database and not spent yet. */
  tokens: number;
  /** The minute's calls granted to all instances, at this instance's last grant. */
  granted: number;
  lastShare: number;
  /** The database granted nothing more this minute. */
  spent: boolean;
  asking: Promise<void> | null;
}

/** A share: a twentieth of the quota, never more than a quarter of what is left, at least one call. */
function shareOf(quota: number, granted: number): number {
  return Math.max(1, Math.min(Math.ceil(quota / 20), Math.ceil((quota - granted) / 4)));
}

/**
 * The organisation's per-minute rate, as a fixed window per calendar minute, shared by every instance on one
 * database. An instance takes shares of the minute's calls from the database (svc_prendre_quota: the shares of all
 * instances never add up to more than the quota) and spends them in memory, asking for the next share in the
 * background when half of the last one is spent: the quota holds across instances and the hot path waits for no
 * round trip. The price is on the other side: calls an instance took and did not spend by the end of the minute are
 * lost to the others (at most about one and a half shares per instance; shares shrink as the minute's quota runs out).
 * Minutes are read on each instance's clock (kept in sync by NTP: a skew of d shifts an instance's minutes by d).
 */
export function createRateLimiter(deps: { db: Queryable; now?: () => number }) {
  const now = deps.now ?? Date.now;
  const windows = new Map<string, Window>();

  function ask(organisationId: string, w: Window): Promise<void> {
    w.asking ??= (async () => {
      try {
        const share = shareOf(w.quota, w.granted);
        const { rows } = await deps.db.query<{ accordes: number; pris: number }>(
          'SELECT * FROM svc_prendre_quota($1, $2, $3, $4)',
          [organisationId, w.minute, w.quota, share],
        );
        w.tokens += rows[0].accordes;
        w.granted = rows[0].pris;
        w.lastShare = share;
        if (rows[0].accordes === 0) w.spent = true;
      } finally {
        w.asking = null;
      }
    })();
    return w.asking;
  }

  function state(w: Window, allowed: boolean, t: number): RateState {
    return {
      allowed,
      limit: w.quota,
      remaining: Math.max(0, w.quota - w.granted + w.tokens),
      resetS: Math.max(1, Math.ceil(((w.minute + 1) * 60_000 - t) / 1000)),
    };
  }

  return {
    /** Counts one call; `allowed` false once the quota of the current minute is spent across instances. */
    async hit(organisationId: string, quota: number): Promise<RateState> {
      for (;;) {
        const t = now();
        const minute = Math.floor(t / 60_000);
        let w = windows.get(organisationId);
        if (!w || w.minute !== minute) {
          if (windows.size > 100_000) windows.clear();
          w = { minute, quota, tokens: 0, granted: 0, lastShare: 0, spent: false, asking: null };
          windows.set(organisationId, w);
        }
        if (w.quota !== quota) {
          // The quota changed: what the database grants follows it.
          w.quota = quota;
          w.spent = false;
        }
        if (w.tokens > 0) {
          w.tokens -= 1;
          if (!w.spent && !w.asking && w.tokens <= w.lastShare / 2) ask(organisationId, w).catch(() => {});
          return state(w, true, t);
        }
        if (w.spent) return state(w, false, t);
        await ask(organisationId, w);
      }
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;

/**
 * Counts `calls` more calls of the current minute in an organisation's per-minute rate: the work a refused request
 * made the service do (estimer_bien_affine: photos fetched and decoded) weighs in the rate as that many calls, though
 * nothing is debited. Taken where every instance takes its shares (svc_prendre_quota), so every instance feels it when
 * it next asks for a share (at most about a share and a half later); what exceeds the minute's quota is not carried
 * into the next minute: the minute is then spent. Returns the calls counted.
 */
export async function chargeCalls(
  db: Queryable,
  organisationId: string,
  calls: number,
  now = Date.now(),
): Promise<number> {
  if (!(calls > 0)) return 0;
  const { rows } = await db.query<{ accordes: number }>(
    `SELECT q.accordes FROM organisations o, svc_prendre_quota(o.id, $2, o.quota_minute, $3) q WHERE o.id = $1`,
    [organisationId, Math.floor(now / 60_000), Math.ceil(calls)],
  );
  return rows[0]?.accordes ?? 0;
}
