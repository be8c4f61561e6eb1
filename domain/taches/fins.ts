import pg from 'pg';
import type { Db } from '../../db/client.ts';
import type { TaskEnds } from '../catalogue.ts';

/** The channel on which PostgreSQL announces each task's end (trigger of migration 015; payload: the task id). */
const CHANNEL = 'svc_taches_fin';
/** Delays before listening again after the connection is lost, in ms: at once, then backing off to every 2 s. */
const RELISTEN_MS = [0, 100, 500, 1000, 2000];

/**
 * The ends of tasks as the database announces them, whatever process ended them (a worker, another api instance):
 * one listening connection per instance, opened at the first wait, fanned out in memory to the waiters of each
 * task. A wait therefore returns at the commit of the task's end, with no polling interval. Announcements made while
 * the connection was down are not replayed by PostgreSQL, so each time it listens again, every task still waited for
 * is read once from its row.
 */
export function createTaskEnds(db: Db): TaskEnds & { close(): Promise<void> } {
  const waiters = new Map<string, Set<() => void>>();
  /** The connection, once it listens. */
  let listening: pg.Client | null = null;
  let opening = false;
  let closed = false;
  let failures = 0;
  let relisten: NodeJS.Timeout | undefined;

  const wake = (id: string) => {
    for (const resolve of waiters.get(id) ?? []) resolve();
  };

  /** Wakes the waiters of those tasks that have ended, or are gone (expired, purged): nothing more will announce them. */
  async function wakeEnded(ids: string[]) {
    if (ids.length === 0) return;
    const { rows } = await db.query<{ id: string }>(
      `SELECT w.id FROM unnest($1::text[]) AS w(id) LEFT JOIN taches t ON t.id = w.id
        WHERE t.id IS NULL OR t.statut IN ('terminee', 'echouee')`,
      [ids],
    );
    for (const { id } of rows) wake(id);
  }

  function listen() {
    if (closed || opening || listening) return;
    opening = true;
    clearTimeout(relisten);
    // Keep-alive: a connection silently dropped by the network would otherwise go unnoticed, its announcements lost.
    const client = new pg.Client({ ...db.options, keepAlive: true });
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      opening = false;
      if (listening === client) listening = null;
      client.end().catch(() => {});
      if (closed) return;
      relisten = setTimeout(listen, RELISTEN_MS[Math.min(failures, RELISTEN_MS.length - 1)]);
      failures += 1;
    };
    client.on('notification', (message) => {
      if (message.payload) wake(message.payload);
    });
    client.on('error', onLost);
    client.on('end', onLost);
    client
      .connect()
      .then(() => client.query(`LISTEN ${CHANNEL}`))
      .then(async () => {
        if (closed) return onLost();
        opening = false;
        // In the same tick as the snapshot below: a waiter added later reads its own task (see wait).
        listening = client;
        await wakeEnded([...waiters.keys()]);
        failures = 0;
      })
      .catch(onLost);
  }

  return {
    async wait(taskId, ms, signal) {
      if (closed || ms <= 0 || signal?.aborted) return;
      let set = waiters.get(taskId);
      if (!set) waiters.set(taskId, (set = new Set()));
      let resolve!: () => void;
      const woken = new Promise<void>((r) => (resolve = r));
      set.add(resolve);
      const timer = setTimeout(resolve, ms);
      signal?.addEventListener('abort', resolve, { once: true });
      try {
        // Registered first, then read: an end committed before the registration is seen by the read, one committed
        // after it is announced. Without a listening connection yet, the connection reads every waiter once it listens.
        if (listening) await wakeEnded([taskId]);
        else listen();
        await woken;
      } finally {
        clearTimeout(timer);
        signal?.removeEventListener('abort', resolve);
        set.delete(resolve);
        if (set.size === 0 && waiters.get(taskId) === set) waiters.delete(taskId);
      }
    },
    /** Stops listening and lets every waiter go (its request answers with the task as it stands). */
    async close() {
      closed = true;
      clearTimeout(relisten);
      for (const id of waiters.keys()) wake(id);
      await listening?.end().catch(() => {});
      listening = null;
    },
  };
}
