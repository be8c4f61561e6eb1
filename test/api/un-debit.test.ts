import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// One answer, one debit: the same request of one organisation within the operation's cache duration is served the
// same answer, not debited again, from its second ask on, whatever the response memory keeps; a field that only dates
// the computation (`calcule_le`) does not make two answers different. On the generated territory, as live data.

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  await loadSandbox(t.db, { dataset: 'live' });
}, 120_000);
afterAll(async () => t?.close());

const MAISON = { type: 'maison', surface: 110, adresse: '11 rue des Pins Latresne', dpe: 'F', prix_demande: 350_000 };
const TAXE = { insee: '33234', surface_taxable_creee_m2: 120, residence_principale: true };

describe('the same request twice', () => {
  for (const [tool, url, body, prix] of [
    ['estimer_bien', '/estimations', MAISON, 10],
    ['taxe_amenagement', '/fiscal/taxe-amenagement', TAXE, 1],
  ] as const) {
    it(`${tool}: debited ${prix}, then 0, with the same fingerprint, and the balance says so`, async () => {
      const org = await t.organisation({ acces: 'usage' }, { personnelle: true });
      const debites: number[] = [];
      const etags = new Set<string>();
      for (let n = 0; n < 3; n += 1) {
        const res = await t.call('POST', url, org.cle, body);
        expect(res.statusCode, res.body).toBe(200);
        debites.push(res.json().credits.debites);
        etags.add(String(res.headers.etag));
        // What the next call says is left is what this one said.
        const profil = await t.call('GET', '/compte/profil', org.cle);
        expect(profil.json().credits.restants).toBe(res.json().credits.restants);
      }
      expect(debites).toEqual([prix, 0, 0]);
      expect(etags.size).toBe(1);
      const { rows } = await t.db.query(
        `SELECT count(*)::int AS n FROM mouvements WHERE organisation_id = $1 AND genre = 'debit'`,
        [org.id],
      );
      expect(rows[0].n).toBe(1);
    });
  }

  it('estimer_bien: another organisation asking the same is debited its own first answer', async () => {
    const a = await t.organisation({ acces: 'usage' });
    const b = await t.organisation({ acces: 'usage' });
    expect((await t.call('POST', '/estimations', a.cle, MAISON)).json().credits.debites).toBe(10);
    expect((await t.call('POST', '/estimations', b.cle, MAISON)).json().credits.debites).toBe(10);
  });
});
