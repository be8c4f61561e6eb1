import type { PoolClient } from 'pg';
import type { Db } from '../../db/client.ts';
import type { Dataset } from '../import/source.ts';

/**
 * Partitions and indexes. dvf_mutations is partitioned by dataset and vintage (db/migrations/013_dvf_partitions.sql):
 * a vintage the dataset does not have yet is loaded into a table of its own, without indexes, then indexed and
 * attached at the end of the import, so that it appears whole or not at all.
 */

/** The partition of a vintage (db/migrations/013_dvf_partitions.sql). */
export const partition = (dataset: Dataset, millesime: number) => `dvf_mutations_${dataset}_${millesime}`;

/** The attached partitions of `dataset`'s vintages: vintage → table name. */
export async function vintagePartitions(db: Pick<Db, 'query'>, dataset: Dataset): Promise<Map<number, string>> {
  const { rows } = await db.query<{ relname: string }>(
    `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'dvf_mutations'::regclass`,
  );
  const partitions = new Map<number, string>();
  for (const { relname } of rows) {
    const millesime = Number(relname.slice(relname.lastIndexOf('_') + 1));
    if (relname === partition(dataset, millesime)) partitions.set(millesime, relname);
  }
  return partitions;
}

/**
 * Empties the sales of `dataset`: its vintages' partitions dropped, so that the next import of each loads it whole
 * again (the fast way), and its vintages forgotten.
 */
export async function emptyDvf(db: Pick<Db, 'query'>, dataset: Dataset): Promise<void> {
  for (const table of (await vintagePartitions(db, dataset)).values()) await db.query(`DROP TABLE ${table}`);
  await db.query('DELETE FROM dvf_millesimes WHERE dataset = $1', [dataset]);
  // No sale left whose novelty could be owed to the journal (domain/dvf/import.ts).
  await db.query('DELETE FROM dvf_journal_attente WHERE dataset = $1', [dataset]);
  // The market's aggregates are computed from these sales only.
  await db.query('DELETE FROM marche_prix WHERE dataset = $1', [dataset]);
  await db.query('DELETE FROM marche_centres WHERE dataset = $1', [dataset]);
}

export type FreshVintages = ReturnType<typeof createFreshVintages>;

/**
 * The vintages new to `dataset` in one import, each COPied into a table of its own, without indexes, and attached by
 * `attach()` at the end (which adds them to `attached`): PostgreSQL then builds its indexes in one sorted pass each
 * (bench/RESULTS.md says what it saves), and it appears whole.
 */
export function createFreshVintages(db: Db, client: PoolClient, dataset: Dataset, attached: Set<number>) {
  const fresh = new Set<number>();
  return {
    /** The table of a new vintage, made the first time it is asked for. */
    async table(millesime: number): Promise<string> {
      const table = partition(dataset, millesime);
      if (!fresh.has(millesime)) {
        // A table of that name not attached is what an import that died left: nothing anyone reads.
        await client.query(`DROP TABLE IF EXISTS ${table}`);
        // The CHECK lets ATTACH know the rows belong there without reading them again.
        await client.query(
          `CREATE TABLE ${table} (LIKE dvf_mutations INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
             CHECK (dataset = '${dataset}' AND millesime = ${millesime}))`,
        );
        fresh.add(millesime);
      }
      return table;
    },
    /** Removes these mutations from the new vintages; returns how many rows went. */
    async forget(ids: string[]): Promise<number> {
      let removed = 0;
      for (const millesime of fresh) {
        const { rowCount } = await client.query(
          `DELETE FROM ${partition(dataset, millesime)} WHERE id_mutation = ANY($1)`,
          [ids],
        );
        removed += rowCount ?? 0;
      }
      return removed;
    },
    /**
     * Indexes the new vintages and attaches them, all in one transaction. Their indexes are those of the table
     * (read from the catalogue, so declared in the migrations only), built three at a time once the reading is over:
     * a build waits on its writes now and then, and a third one keeps both cores busy meanwhile (measured: 1.7 s
     * instead of 1.9 s with two, bench/RESULTS.md). ATTACH then finds them built. Then they are analysed: without
     * statistics until autovacuum comes, the planner took a commune of a new vintage for 16 rows instead of 3 259 and
     * sorted it whole for each page of lire_jeu (500-670 ms instead of 43-54 ms, bench/jeux.ts on real Paris).
     */
    async attach() {
      if (fresh.size === 0) return;
      const vintages = [...fresh].sort((a, b) => a - b);
      const { rows } = await client.query<{ primaire: boolean; definition: string }>(
        `SELECT indisprimary AS primaire, pg_get_indexdef(indexrelid) AS definition
           FROM pg_index WHERE indrelid = 'dvf_mutations'::regclass ORDER BY indexrelid`,
      );
      const builds = vintages.flatMap((millesime) => {
        const table = partition(dataset, millesime);
        return rows.map(({ primaire, definition }) => {
          const name = primaire ? `${table}_pkey` : '';
          const create = definition.replace(
            /^CREATE (UNIQUE )?INDEX \S+ ON ONLY \S+ /,
            (_, unique: string | undefined) => `CREATE ${unique ?? ''}INDEX ${name} ON ${table} `,
          );
          return primaire
            ? [create, `ALTER TABLE ${table} ADD CONSTRAINT ${name} PRIMARY KEY USING INDEX ${name}`]
            : [create];
        });
      });
      // The import's connection and up to two more, leaving one of the pool free: a connection its caller holds
      // meanwhile must not leave these waiting for it.
      const others = await Promise.all(
        Array.from({ length: Math.max(0, Math.min(2, (db.options.max ?? 10) - 2)) }, () => db.connect()),
      );
      try {
        const build = async (connection: PoolClient) => {
          for (let next = builds.shift(); next; next = builds.shift()) {
            await connection.query('BEGIN');
            try {
              // Sorts in memory up to this (PostgreSQL's default, 64 MB, spills a vintage's sorts to disk); no
              // parallel workers of PostgreSQL's own beside these builds.
              await connection.query(
                `SET LOCAL maintenance_work_mem = '256MB'; SET LOCAL max_parallel_maintenance_workers = 0`,
              );
              for (const statement of next) await connection.query(statement);
              await connection.query('COMMIT');
            } catch (error) {
              await connection.query('ROLLBACK').catch(() => {});
              builds.length = 0;
              throw error;
            }
          }
        };
        // All settle before the connections go back to the pool; the first failure is raised.
        const outcomes = await Promise.allSettled([client, ...others].map(build));
        for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
      } finally {
        for (const other of others) other.release();
      }
      await client.query('BEGIN');
      try {
        await client.query('SET LOCAL synchronous_commit = on');
        for (const millesime of vintages) {
          await client.query(
            `ALTER TABLE dvf_mutations ATTACH PARTITION ${partition(dataset, millesime)}
               FOR VALUES FROM ('${dataset}', ${millesime}) TO ('${dataset}', ${millesime + 1})`,
          );
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
      for (const millesime of vintages) {
        fresh.delete(millesime);
        attached.add(millesime);
      }
      // A sample of each (30 000 rows at the default target): well under a second a vintage.
      for (const millesime of vintages) await client.query(`ANALYZE ${partition(dataset, millesime)}`);
    },
    /** Drops what an import that failed loaded into new vintages: it never appeared. */
    async discard() {
      for (const millesime of fresh) await client.query(`DROP TABLE IF EXISTS ${partition(dataset, millesime)}`);
      fresh.clear();
    },
  };
}
