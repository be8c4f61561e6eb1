import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationId } from '../../domain/catalogue.ts';
import { OPERATIONS } from '../../domain/operations.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createTestApp, type TestApp } from '../support/app.ts';

// « The 403 hors_bac_a_sable here means a pk_test_ key asks an entry outside the frozen dataset » (the specification):
// every operation with a sandbox, asked by a test key about a territory outside it (Marseille, département 13), is
// refused so, nothing debited, rather than answered with an empty list or a 404.

/**
 * Sandbox operations whose input names no territory: a model's measures, a task's result, a listing or an agency (an
 * identifier, a SIREN: one outside the frozen set is absent from it, 404).
 */
const SANS_TERRITOIRE = new Set([
  'modeles',
  'modeles_modele',
  'resultat_lire_plu',
  'annonce',
  'agences_siren',
  'jeux',
  'schema_jeu',
]);

const HORS: Record<string, Array<{ method: 'GET' | 'POST'; url: string; body?: object }>> = {
  resoudre_adresse: [
    { method: 'GET', url: '/adresses/recherche?q=Traverse%20Zbrzych%20Kwiatowa' },
    { method: 'GET', url: '/adresses/recherche?q=rue%20des%20Pins&code_postal=13001' },
  ],
  resoudre_adresse_inverse: [{ method: 'GET', url: '/adresses/inverse?lat=43.2965&lon=5.3698' }],
  estimer_bien: [
    { method: 'POST', url: '/estimations', body: { type: 'appartement', surface: 50, insee: '13201' } },
    {
      method: 'POST',
      url: '/estimations',
      body: { type: 'appartement', surface: 50, adresse: '10 rue de la République', code_postal: '13001' },
    },
    {
      method: 'POST',
      url: '/estimations',
      body: { type: 'appartement', surface: 50, adresse: 'Traverse Zbrzych Kwiatowa' },
    },
  ],
  commune: [{ method: 'GET', url: '/communes/13201' }],
  comparer_communes: [{ method: 'GET', url: '/communes/comparaison?insee=33234,13201' }],
  palmares_communes: [
    { method: 'GET', url: '/communes/palmares?indicateur=prix-bas&departement=13' },
    { method: 'GET', url: '/communes/palmares?indicateur=prix-bas&region=PACA' },
  ],
  prix_commune: [{ method: 'GET', url: '/communes/13201/prix' }],
  prix_iris: [{ method: 'GET', url: '/iris/132010101' }],
  prix_iris_commune: [{ method: 'GET', url: '/communes/13201/iris' }],
  avis_zone: [{ method: 'GET', url: '/communes/13201/avis' }],
  agences: [
    { method: 'GET', url: '/agences?insee=13201' },
    { method: 'GET', url: '/agences?cp=13001' },
    { method: 'GET', url: '/agences?departement=13&enseigne=cabinet' },
  ],
  agences_commune: [{ method: 'GET', url: '/communes/13201/agences' }],
  // A dataset filter naming a territory (eq or in) outside the frozen set.
  lire_jeu: [
    { method: 'GET', url: '/jeux/dvf?filtre[code_commune][eq]=13201' },
    { method: 'GET', url: '/jeux/annonces?filtre[insee][eq]=33234&filtre[code_postal][in]=33360,13001' },
  ],
  agreger_jeu: [{ method: 'GET', url: '/jeux/mutations/agregats?filtre[code_departement][eq]=13' }],
  taxe_amenagement: [
    {
      method: 'POST',
      url: '/fiscal/taxe-amenagement',
      body: { insee: '13201', surface_taxable_creee_m2: 100, residence_principale: true },
    },
  ],
};

let t: TestApp;
let cle: string;
beforeAll(async () => {
  t = await createTestApp();
  await loadSandbox(t.db, { dataset: 'sandbox' });
  const org = await t.organisation({ acces: 'usage' });
  cle = (await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'test', personnelle: true })).body.cle;
}, 120_000);
afterAll(async () => t?.close());

describe('a test key outside the frozen territory', () => {
  it('walks every operation with a sandbox: each names its territory, or names none', () => {
    const avecBac = OPERATIONS.filter((o) => o.sandbox).map(operationId);
    expect(avecBac.filter((o) => !SANS_TERRITOIRE.has(o)).sort()).toEqual(Object.keys(HORS).sort());
  });

  for (const [outil, appels] of Object.entries(HORS)) {
    it(`${outil}: 403 hors_bac_a_sable, nothing served`, async () => {
      for (const appel of appels) {
        const res = await t.call(appel.method, appel.url, cle, appel.body);
        expect(res.statusCode, `${appel.url} ${res.body}`).toBe(403);
        expect(res.json().code).toBe('hors_bac_a_sable');
      }
    });
  }

  it('is still served inside it: Latresne, département 33', async () => {
    for (const url of [
      '/communes/33234/prix',
      '/communes/palmares?indicateur=prix-bas&departement=33',
      '/communes/33234',
    ]) {
      const res = await t.call('GET', url, cle);
      expect(res.statusCode, `${url} ${res.body}`).toBe(200);
    }
  });

  it('says why a scale is empty: Strasbourg, Alsace-Moselle, is not in DVF', async () => {
    const res = await t.call('GET', '/communes/67482/prix', cle);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().bareme).toEqual([]);
    expect(res.json().limites.join(' ')).toMatch(/Alsace-Moselle.*n’est pas dans DVF/);
    const latresne = (await t.call('GET', '/communes/33234/prix', cle)).json();
    expect(latresne.bareme.length).toBeGreaterThan(0);
    expect(latresne.limites).toEqual([]);
  });
});
