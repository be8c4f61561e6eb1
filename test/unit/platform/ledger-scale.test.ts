import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { migrate } from '../../../db/migrate.ts';
import { purgeServedAnswers } from '../../../domain/platform/debits.ts';
import { createTestDb } from '../../support/db.ts';

let db: Db;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ db, drop } = await createTestDb('024_marche_palmares.sql'));
});
afterAll(async () => drop());

const solde = async (org: string, cle: string) =>
  (await db.query('SELECT * FROM svc_solde($1, $2)', [org, cle])).rows[0] as {
    restants: number;
    cle_utilise: number;
    cle_plafond: number | null;
  };

describe('migration 025, a key’s month kept as a counter', () => {
  it('counts the debits, reservations and give-backs written before it, then every later one, for the cap', async () => {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO organisations (nom, acces, portees, quota_minute) VALUES ('Cap', 'usage', '{}', 60) RETURNING id`,
    );
    const org = rows[0]!.id;
    const cle = (
      await db.query<{ id: string }>(
        `INSERT INTO cles (organisation_id, mode, prefixe, empreinte, plafond_mensuel)
         VALUES ($1, 'live', 'pk_live_cap', '\\x01', 10) RETURNING id`,
        [org],
      )
    ).rows[0]!.id;
    const ecrire = (genre: string, gratuits: number, cleId: string | null = cle) =>
      db.query(`SELECT svc_ecrire($1, $2, $3, $4, 0, 0, 'essai', NULL, NULL, NULL, NULL)`, [
        org,
        cleId,
        genre,
        gratuits,
      ]);
    await ecrire('octroi', 100, null);
    await ecrire('debit', -3);
    await ecrire('reservation', -4);
    await ecrire('restitution', 4);
    await ecrire('debit', -2, null); // another caller's debit (no key): not this key's
    expect(await migrate(db, '025_facturation_durable.sql')).toEqual(['025_facturation_durable.sql']);
    expect(await solde(org, cle)).toMatchObject({ restants: 95, cle_utilise: 3, cle_plafond: 10 });

    // svc_ecrire counts as it writes; the batch counts its debits once per key.
    await ecrire('debit', -1);
    const lot = async (n: number, prefixe: string) =>
      (
        await db.query<{ issue: string }>(
          `SELECT issue FROM svc_debiter_lot($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[])
            ORDER BY rang`,
          [
            Array(n).fill(org),
            Array(n).fill(cle),
            Array(n).fill(1),
            Array(n).fill('essai'),
            Array.from({ length: n }, (_, i) => `${prefixe}${i}`),
            Array.from({ length: n }, (_, i) => `"${prefixe}${i}"`),
          ],
        )
      ).rows.map((r) => r.issue);
    // 4 used: 6 more fit under the cap of 10, the rest of the batch is refused.
    expect(await lot(8, 'a')).toEqual([...Array(6).fill('debite'), 'plafond_cle', 'plafond_cle']);
    expect(await solde(org, cle)).toMatchObject({ cle_utilise: 10 });
    expect(await lot(1, 'b')).toEqual(['plafond_cle']);
    const compte = await db.query(
      `SELECT (SELECT credits FROM consommation_cles WHERE cle_id = $1)::int AS compteur,
              (SELECT -sum(credits) FROM mouvements WHERE cle_id = $1
                  AND genre IN ('debit', 'reservation', 'restitution'))::int AS mouvements`,
      [cle],
    );
    expect(compte.rows[0]).toEqual({ compteur: 10, mouvements: 10 });
  });
});

describe('the memory of served answers', () => {
  it('forgets fingerprints served more than 24 h ago, and only those', async () => {
    await migrate(db);
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO organisations (nom, acces, portees, quota_minute) VALUES ('Purge', 'usage', '{}', 60) RETURNING id`,
    );
    const org = rows[0]!.id;
    await db.query(
      `INSERT INTO reponses_servies (organisation_id, empreinte, servi_le)
       SELECT $1::uuid, 'vieille-' || k, now() - interval '25 hours' FROM generate_series(1, 12345) k
       UNION ALL SELECT $1::uuid, 'recente', now() - interval '23 hours'`,
      [org],
    );
    expect(await purgeServedAnswers(db)).toBe(12_345);
    const reste = await db.query('SELECT empreinte FROM reponses_servies WHERE organisation_id = $1', [org]);
    expect(reste.rows).toEqual([{ empreinte: 'recente' }]);
  });
});
