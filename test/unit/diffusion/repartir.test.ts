import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ecrireEvenements, type NouvelEvenement } from '../../../domain/annonces/journal.ts';
import { repartir } from '../../../domain/diffusion/repartir.ts';
import { lireResultats } from '../../../domain/veilles/resultats.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

// The fan-out reads the journal page by page after its cursor. Its ids are bigints it carries as text: a page sorted
// by that text would put 1000 before 997, read the wrong events, and move the cursor past the others for good (seen
// at 10,000 new listings: 8,000 of them never delivered). Pages here are of 4 events, across 999 → 1000.

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const nouvelle = (n: number): NouvelEvenement => ({
  genre: 'nouvelle',
  le: '2025-03-01T09:00:00Z',
  annonceId: `an_dizaines_${n}`,
  insee: '75111',
  codePostal: '75011',
  departement: '75',
  avant: null,
  apres: { prix: 100_000 + n, actif: true },
});

describe('repartir', () => {
  it('fans out every event once, in id order, when the ids cross a power of ten within a page', async () => {
    const { cle } = await t.organisation({ acces: 'data' });
    const res = await t.call('POST', '/webhooks', cle, {
      url: 'https://abonne.example/dizaines',
      genres: ['nouvelle'],
    });
    expect(res.statusCode, res.body).toBe(200);
    const webhookId = res.json().webhook.id as string;
    // The cursor at 996, and the next ids from 997 on.
    await t.db.query(`UPDATE diffusion_curseurs SET dernier_id = 996 WHERE journal = 'annonces'`);
    await t.db.query(`SELECT setval('annonces_evenements_id', 996)`);
    const client = await t.db.connect();
    let ids: number[];
    try {
      await client.query('BEGIN');
      ids = await ecrireEvenements(
        client,
        'live',
        Array.from({ length: 10 }, (_, i) => nouvelle(i)),
      );
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    expect(ids).toEqual([997, 998, 999, 1000, 1001, 1002, 1003, 1004, 1005, 1006]);

    const pages: number[] = [];
    for (;;) {
      const r = await repartir(t.db, 4);
      expect(r).not.toBeNull();
      pages.push(r!.evenements);
      if (!r!.reste) break;
    }
    expect(pages).toEqual([4, 4, 2]);
    const { rows } = await t.db.query<{ evenement: string }>(
      'SELECT evenement FROM livraisons WHERE webhook_id = $1 ORDER BY rang',
      [webhookId],
    );
    expect(rows.map((r) => r.evenement)).toEqual(ids.map((id) => `annonce:${id}`));
    const { rows: curseur } = await t.db.query(`SELECT dernier_id FROM diffusion_curseurs WHERE journal = 'annonces'`);
    expect(Number(curseur[0].dernier_id)).toBe(1006);
  });

  it('reads the results of a watch by cursor in id order across a power of ten', async () => {
    const { id: organisationId } = await t.organisation({ acces: 'data' });
    const { rows: v } = await t.db.query<{ id: string }>(
      `INSERT INTO veilles (organisation_id, nature, evenement_depart, adresse_depart) VALUES ($1, 'recherche', 0, 0)
       RETURNING id`,
      [organisationId],
    );
    await t.db.query(`SELECT setval(pg_get_serial_sequence('veilles_resultats', 'id'), 996)`);
    await t.db.query(
      `INSERT INTO veilles_resultats (organisation_id, veille_id, genre, journal, evenement_id, le, releve_le,
                                      disponible_le, donnees)
       SELECT $1, $2, 'veille.resultat', 'annonces', n, now(), now(), now() - interval '1 hour', '{}'
         FROM generate_series(1, 10) AS n`,
      [organisationId, v[0].id],
    );
    const lus: string[] = [];
    let apres = 0;
    for (;;) {
      const page = await lireResultats(t.db, organisationId, {
        apres,
        limite: 4,
        veilleId: null,
        maintenant: new Date(),
      });
      lus.push(...page.resultats.map((r) => r.id));
      if (!page.reste) break;
      apres = Number(lus.at(-1));
    }
    expect(lus).toEqual(['997', '998', '999', '1000', '1001', '1002', '1003', '1004', '1005', '1006']);
  });
});
