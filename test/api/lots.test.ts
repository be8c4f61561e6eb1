import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// Batch variants: POST <path>/lot with {"elements": [ … ]}, each element served and billed as its own call, in order.
// On the generated territory, as live data.

let t: TestApp;
let adresses: Array<{ libelle: string; cle_ban: string }>;
beforeAll(async () => {
  t = await createTestApp();
  await loadSandbox(t.db, { dataset: 'live' });
  ({ rows: adresses } = await t.db.query<{ libelle: string; cle_ban: string }>(
    `SELECT libelle, cle_ban FROM adresses WHERE dataset = 'live' AND type = 'numero' ORDER BY cle_ban LIMIT 100`,
  ));
}, 120_000);
afterAll(async () => t?.close());

const MAISON = { type: 'maison', surface: 110, adresse: '11 rue des Pins Latresne', dpe: 'F' };

describe('a batch', () => {
  it('geocodes 100 addresses in one request, in order, each as its own call', async () => {
    expect(adresses).toHaveLength(100);
    const org = await t.organisation({ acces: 'usage' });
    const res = await t.call('POST', '/adresses/recherche/lot', org.cle, {
      elements: adresses.map((a) => ({ q: a.libelle, limite: 1 })),
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.elements).toHaveLength(100);
    body.elements.forEach((e: any, i: number) => {
      expect(e.statut, adresses[i]!.libelle).toBe(200);
      expect(e.erreur).toBeNull();
      expect(e.resultat.candidats[0].cle_ban, adresses[i]!.libelle).toBe(adresses[i]!.cle_ban);
    });
    expect(body.credits.debites).toBe(0);
  });

  it('bills each element at its price, an identical answer once, and answers each refusal in its place', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const avant = (await t.call('POST', '/estimations/lot', org.cle, { elements: [MAISON] })).json();
    expect(avant.credits.debites).toBe(10);
    const res = await t.call('POST', '/estimations/lot', org.cle, {
      elements: [MAISON, { ...MAISON, surface: 90 }, { type: 'maison' }, { ...MAISON, surface: 90 }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.elements.map((e: any) => e.statut)).toEqual([200, 200, 400, 200]);
    expect(body.elements[2].erreur).toMatchObject({ code: 'parametres_invalides', status: 400 });
    expect(body.elements[2].resultat).toBeNull();
    // The first was served already within 24 h; the two at 90 m² are one answer.
    expect(body.credits.debites).toBe(10);
    expect(res.headers['svc-credits-debites']).toBe('10');
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM mouvements WHERE organisation_id = $1 AND genre = 'debit'`,
      [org.id],
    );
    expect(rows[0].n).toBe(2);
    const profil = await t.call('POST', '/estimations/lot', org.cle, { elements: [MAISON] });
    expect(profil.json().credits).toEqual({ debites: 0, restants: body.credits.restants });
  });

  it('takes an address per element for the operations with a path parameter', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const res = await t.call('POST', '/adresses/faits/lot', org.cle, {
      elements: [{ cle_ban: adresses[0]!.cle_ban }, { cle_ban: '99999_zzzz_00001' }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const [connue, inconnue] = res.json().elements;
    expect(connue.statut).toBe(200);
    expect(inconnue.statut).toBeGreaterThanOrEqual(400);
    expect(inconnue.erreur.code).toBeTypeOf('string');
  });

  it('is refused whole only for what concerns it: the key, the size, the body', async () => {
    const org = await t.organisation({ acces: 'usage' });
    const sansCle = await t.app.inject({
      method: 'POST',
      url: '/api/v1/adresses/recherche/lot',
      headers: { 'content-type': 'application/json' },
      payload: { elements: [{ q: 'x' }] },
    });
    expect(sansCle.statusCode).toBe(401);
    const tropGrand = await t.call('POST', '/adresses/recherche/lot', org.cle, {
      elements: Array.from({ length: 101 }, () => ({ q: 'rue des Pins' })),
    });
    expect(tropGrand.statusCode).toBe(400);
    expect(tropGrand.json().erreurs).toEqual([expect.objectContaining({ champ: 'elements' })]);
    for (const corps of [{}, { elements: [] }, { elements: 'x' }, [{ q: 'x' }]]) {
      expect((await t.call('POST', '/adresses/recherche/lot', org.cle, corps)).statusCode).toBe(400);
    }
  });

  it('is described: one batch path per declared operation, its price and tier', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    for (const path of ['/adresses/recherche/lot', '/adresses/faits/lot', '/adresses/ventes/lot', '/estimations/lot']) {
      const op = doc.paths[`/api/v1${path}`]?.post;
      expect(op, path).toBeDefined();
      expect(op.requestBody.content['application/json'].schema.properties.elements.maxItems).toBe(100);
      expect(op['x-svc-palier-minimal']).toBe('usage');
    }
  });
});
