import pg from 'pg';
import type { Db } from '../../db/client.ts';

const RECONNECT_MS = 1000;

/**
 * Changes to keys and organisations as the database announces them (NOTIFY svc_acces, migration 015), on a
 * connection of its own: `onChange` runs on each announcement, and also when the connection is made or lost, since
 * what was announced meanwhile is unknown. While it is down it is made again every second; the memory's own bound
 * (2 s) holds meanwhile.
 */
export function listenToAccessChanges(db: Db, onChange: () => void): { close(): Promise<void> } {
  let closed = false;
  let client: pg.Client | null = null;
  let timer: NodeJS.Timeout | undefined;

  function connect() {
    if (closed) return;
    // Keep-alive: a connection silently dropped by the network would otherwise go unnoticed, its announcements lost.
    const c = new pg.Client({ ...db.options, keepAlive: true });
    client = c;
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (client === c) client = null;
      onChange();
      c.end().catch(() => {});
      if (!closed) {
        timer = setTimeout(connect, RECONNECT_MS);
        timer.unref();
      }
    };
    c.on('error', onLost);
    c.on('end', onLost);
    c.on('notification', () => onChange());
    c.connect()
      .then(() => c.query('LISTEN svc_acces'))
      .then(() => {
        if (!lost) onChange();
      })
      .catch(onLost);
  }

  connect();
  return {
    async close() {
      closed = true;
      clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
