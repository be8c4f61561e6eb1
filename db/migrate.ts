import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Db } from './client.ts';
import { transaction } from './client.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// Any constant shared by every instance: concurrent boots wait for each other instead of racing.
const LOCK_ID = 726_354_001;

/**
 * Applies the migrations not applied yet, in file-name order, each in its own transaction, up to `until` included
 * when given (a test of a migration starts from the schema before it). Returns their names.
 */
export async function migrate(db: Db, until?: string): Promise<string[]> {
  const files = (await readdir(MIGRATIONS_DIR))
    .filter((f) => f.endsWith('.sql') && (until === undefined || f <= until))
    .sort();
  const client = await db.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_ID]);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (nom text PRIMARY KEY, applique_le timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await client.query<{ nom: string }>('SELECT nom FROM schema_migrations')).rows.map((r) => r.nom),
    );
    const applied: string[] = [];
    for (const file of files.filter((f) => !done.has(f))) {
      const sql = await readFile(MIGRATIONS_DIR + file, 'utf8');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (nom) VALUES ($1)', [file]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(`Migration ${file} : ${(error as Error).message}`, { cause: error });
      }
      applied.push(file);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_ID]).catch(() => {});
    client.release();
  }
}

export { transaction };
