import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { PoolClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { importAnnonces } from '../../../domain/annonces/import.ts';
import { ecrireEvenements, lireEvenements, type NouvelEvenement } from '../../../domain/annonces/journal.ts';
import { createTestDb } from '../../support/db.ts';
import { appartement, fichierReleves } from './support.ts';

// The journal's rule (DESIGN.md section 15): a reader past id N never misses a smaller id committed later, because
// every writer takes the journal's transaction-level lock before it takes ids.

let testDb: Awaited<ReturnType<typeof createTestDb>>;
let db: Db;
let dir: string;

beforeAll(async () => {
  testDb = await createTestDb();
  db = testDb.db;
  dir = await mkdtemp(path.join(tmpdir(), 'annonces-journal-'));
});
afterAll(async () => {
  await testDb?.drop();
  await rm(dir, { recursive: true, force: true });
});

const evenement = (annonceId: string): NouvelEvenement => ({
  genre: 'nouvelle',
  le: '2025-03-01T09:00:00Z',
  annonceId,
  insee: '75111',
  codePostal: '75011',
  departement: '75',
  avant: null,
  apres: { prix: 100_000, actif: true },
});

async function pidDe(client: PoolClient): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
}

/** Resolves once the backend `pid` waits on a lock (no timing: it asks the server until it says so). */
async function bloque(pid: number): Promise<void> {
  for (;;) {
    const { rows } = await db.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [
      pid,
    ]);
    if (rows.length > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** A reader: reads every page from where it stopped, and remembers what it was served. */
function lecteur(dataset: 'live' | 'sandbox' = 'live') {
  let apres = 0;
  const lus: number[] = [];
  return {
    lus,
    async lire() {
      for (;;) {
        const page = await lireEvenements(db, dataset, apres, {}, 2);
        lus.push(...page.evenements.map((e) => e.id));
        apres = page.reprise;
        if (!page.reste) return;
      }
    },
  };
}

describe('two writers of the journal at once', () => {
  it('never make a reader skip an event: the second takes its ids after the first commits', async () => {
    const a = await db.connect();
    const b = await db.connect();
    try {
      await a.query('BEGIN');
      await b.query('BEGIN');
      const idsA = await ecrireEvenements(a, 'live', [evenement('a1'), evenement('a2')]);
      const pidB = await pidDe(b);
      const ecritureB = ecrireEvenements(b, 'live', [evenement('b1')]);
      await bloque(pidB);

      const r = lecteur();
      await r.lire();
      expect(r.lus).toEqual([]);
      await a.query('COMMIT');
      const idsB = await ecritureB;
      expect(Math.min(...idsB)).toBeGreaterThan(Math.max(...idsA));
      // B's ids are taken but not committed: the reader sees A's, and stops where it can resume safely.
      await r.lire();
      expect(r.lus).toEqual(idsA);
      await b.query('COMMIT');
      await r.lire();
      expect(r.lus).toEqual([...idsA, ...idsB]);
    } finally {
      await a.query('ROLLBACK').catch(() => {});
      await b.query('ROLLBACK').catch(() => {});
      a.release();
      b.release();
    }
  });

  it('would skip one without the lock: ids taken in one order, committed in the other (the hazard the lock removes)', async () => {
    const a = await db.connect();
    const b = await db.connect();
    const r = lecteur('sandbox');
    try {
      await a.query('BEGIN');
      await b.query('BEGIN');
      const inserer = (client: PoolClient, id: string) =>
        client.query(
          `INSERT INTO annonces_evenements (id, dataset, genre, le, annonce_id)
           VALUES (nextval('annonces_evenements_id'), 'sandbox', 'nouvelle', now(), $1) RETURNING id`,
          [id],
        );
      const petit = Number((await inserer(a, 'lent')).rows[0].id);
      const grand = Number((await inserer(b, 'rapide')).rows[0].id);
      expect(grand).toBeGreaterThan(petit);
      await b.query('COMMIT');
      await r.lire();
      await a.query('COMMIT');
      await r.lire();
      expect(r.lus).toEqual([grand]);
    } finally {
      await a.query('ROLLBACK').catch(() => {});
      await b.query('ROLLBACK').catch(() => {});
      a.release();
      b.release();
    }
  });

  it('two imports at once, a reader polling all along: every event read once, in id order', async () => {
    const fichier = async (nom: string, premier: number) =>
      fichierReleves(
        dir,
        nom,
        Array.from({ length: 40 }, (_, k) =>
          appartement({
            id: String(premier + k),
            surface: 20 + k * 3,
            prix: 200_000 + k * 10_000,
            position: { lat: 48.85 + (premier + k) / 10_000, lon: 2.37 },
          }),
        ),
      );
    const [f1, f2] = await Promise.all([fichier('un.jsonl', 10_000), fichier('deux.jsonl', 20_000)]);
    const r = lecteur();
    let fini = false;
    const imports = Promise.all([
      importAnnonces(db, f1, { maintenant: new Date('2025-11-01') }),
      importAnnonces(db, f2, { maintenant: new Date('2025-11-01') }),
    ]).finally(() => (fini = true));
    while (!fini) await r.lire();
    await imports;
    await r.lire();
    const { rows } = await db.query<{ id: number }>(
      `SELECT id FROM annonces_evenements WHERE dataset = 'live' ORDER BY id`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(160);
    expect(r.lus).toEqual(rows.map((x) => Number(x.id)));
  });
});

describe('the journal', () => {
  it('is append-only: an event is never rewritten', async () => {
    await expect(db.query(`UPDATE annonces_evenements SET genre = 'retrait'`)).rejects.toThrow(/ajout seul/);
  });
});
