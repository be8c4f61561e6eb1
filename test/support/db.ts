import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { createDb, type Db } from '../../db/client.ts';
import { migrate } from '../../db/migrate.ts';

/** A fresh, migrated database of its own for one test file (up to the migration `until`), dropped by `drop()`. */
export async function createTestDb(until?: string): Promise<{ db: Db; url: string; drop(): Promise<void> }> {
  const serverUrl = new URL(inject('databaseUrl'));
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createDb(url.toString(), 20);
  await migrate(db, until);
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.end();
      const again = new pg.Client({ connectionString: serverUrl.toString() });
      await again.connect();
      await again.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await again.end();
    },
  };
}
