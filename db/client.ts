import pg from 'pg';

// Integers beyond 2^31 (bigint sums of the ledger) come back as numbers: credit totals stay far below 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (v) => Number(v));

export type Db = pg.Pool;
export type Queryable = Pick<pg.Pool | pg.PoolClient, 'query'>;

export function createDb(connectionString: string, max = 10): Db {
  const pool = new pg.Pool({ connectionString, max, idleTimeoutMillis: 30_000 });
  // An idle client losing its server (restart, failover) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return pool;
}

/** Runs `work` in one transaction: committed when it returns, rolled back when it throws. */
export async function transaction<T>(
  db: Db,
  work: (client: pg.PoolClient) => Promise<T>,
  reglages: Record<string, string | number> = {},
): Promise<T> {
  const client = await db.connect();
  try {
    // Settings of the transaction alone (SET LOCAL), sent with its BEGIN: one round trip, not one each.
    await client.query(
      ['BEGIN', ...Object.entries(reglages).map(([nom, valeur]) => `SET LOCAL ${nom} = ${valeur}`)].join('; '),
    );
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
