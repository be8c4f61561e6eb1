import type { Db } from '../../db/client.ts';

// One advisory lock of the database for every load of data: the first load of `npm start` (the sandbox and the
// demonstration territory) and each import. An import started during that first load waits for it instead of
// interleaving with it: the derived tables an import rebuilds (price scales, indicators) would otherwise depend on
// which rows of the demonstration were still there when it read them.
const VERROU_CHARGEMENT = 7_318_245_001;

/**
 * Runs `work` holding the load lock, on a connection of its own for the whole work; when another load holds it,
 * `onWait` is told first, then the work waits its turn.
 */
export async function sousVerrouDeChargement<T>(db: Db, onWait: () => void, work: () => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    const { rows } = await client.query<{ pris: boolean }>('SELECT pg_try_advisory_lock($1) AS pris', [
      VERROU_CHARGEMENT,
    ]);
    if (!rows[0]!.pris) {
      onWait();
      await client.query('SELECT pg_advisory_lock($1)', [VERROU_CHARGEMENT]);
    }
    try {
      return await work();
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [VERROU_CHARGEMENT]);
    }
  } finally {
    client.release();
  }
}
