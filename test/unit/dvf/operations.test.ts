import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { dvfOperations } from '../../../domain/dvf/operations.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { etalab, HEADER } from './fixtures.ts';

const ABZAC = path.resolve('../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasAbzac = existsSync(ABZAC);
const SKIP = hasAbzac ? '' : ' (skipped: ../shared/data/dvf absent)';

let t: TestApp;
let dir: string;
let org: { id: string; cle: string };

// The BAN number of 2021-527130 (« 6 T BARRAUD », code de voie B012, parcelle AC0495), as the BAN importer writes it.
const BARRAUD = {
  cle_ban: '33001_b012_00006_ter',
  lat: 45.02227,
  lon: -0.14995,
  parcelles: ['33001000AC0495'],
};

beforeAll(async () => {
  t = await createTestApp({ operations: dvfOperations as Operation[] });
  dir = await mkdtemp(path.join(tmpdir(), 'dvf-api-'));
  await t.db.query(
    `INSERT INTO adresses (dataset, cle_ban, type, numero, suffixe, voie, code_voie, code_postal, insee, commune, libelle,
                           lat, lon, parcelles, source)
     VALUES ('live', $1, 'numero', 6, 'ter', 'Barraud', 'B012', '33230', '33001', 'Abzac', '6 ter Barraud 33230 Abzac',
             $2, $3, $4, 'ban'),
            ('live', '67482_1234_00001', 'numero', 1, NULL, 'Place Kléber', '1234', '67000', '67482', 'Strasbourg',
             '1 Place Kléber 67000 Strasbourg', 48.5834, 7.7458, '{67482000AB0001}', 'ban')`,
    [BARRAUD.cle_ban, BARRAUD.lat, BARRAUD.lon, BARRAUD.parcelles],
  );
  if (hasAbzac) await importDvf(t.db, ABZAC);
  org = await t.organisation({ acces: 'usage' });
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const get = (url: string, cle = org.cle) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: `Bearer ${cle}` } });

async function debits(operation: string): Promise<number> {
  const res = await t.admin('GET', `/organisations/${org.id}/releve?limite=200`);
  return (res.body.mouvements as Array<{ genre: string; operation: string; credits: number }>)
    .filter((m) => m.genre === 'debit' && m.operation === operation)
    .reduce((s, m) => s + Math.abs(m.credits), 0);
}

describe('ventes in a commune (Abzac, 33001)', () => {
  it.skipIf(!hasAbzac)(`returns the 50 mutations grouped, newest first, 1 credit each${SKIP}`, async () => {
    const res = await get('/ventes?insee=33001&limite=50');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.recherche).toEqual({
      mode: 'commune',
      tri: 'date',
      insee: '33001',
      lat: null,
      lon: null,
      rayon_m: null,
    });
    expect(body.donnees).toHaveLength(50);
    expect(body.curseur_suivant).toBeNull();
    const ids = body.donnees.map((m: { id_mutation: string }) => m.id_mutation);
    expect(new Set(ids).size).toBe(50);
    const dates = body.donnees.map((m: { date: string }) => m.date);
    expect(dates).toEqual([...dates].sort().reverse());
    expect(body.credits).toEqual({ debites: 50, restants: 450 });
    expect(res.headers['svc-credits-debites']).toBe('50');

    // By hand from the CSV: 2021-547818 sells a house of 129 m² (on three lines, one per land subdivision) and a
    // dependency for 259 500 €: 259 500 / 129 = 2 011.63 €/m².
    const maison = body.donnees.find((m: { id_mutation: string }) => m.id_mutation === '2021-547818');
    expect(maison).toMatchObject({
      date: '2021-12-29',
      nature: 'vente',
      valeur_fonciere: 259500,
      insee: '33001',
      surface_logements: 129,
      prix_m2: 2011.63,
      surface_terrain: 3731,
      parcelles: ['330010000B1730'],
      indicateurs: {
        logements: 1,
        vente_en_bloc: false,
        avec_dependance: true,
        avec_local_pro: false,
        prix_atypique: false,
        motif: null,
      },
      qualite: { n: 6, provenance: 'mesure', drapeaux: [], donnees_du: '2021-12-29', source: 'DVF (DGFiP, Etalab)' },
      millesime: 2021,
      rattachement: null,
      distance_m: null,
    });
    expect(maison.locaux.map((l: { type: string }) => l.type).sort()).toEqual(['dependance', 'maison']);
    expect(maison.terrains).toHaveLength(3);

    // 2021-527130 (2 700 € for 6 ter Barraud) is attached to its BAN number at import, and flagged.
    const barraud = body.donnees.find((m: { id_mutation: string }) => m.id_mutation === '2021-527130');
    expect(barraud.adresse).toEqual({ numero: '6 ter', voie: 'BARRAUD', code_voie: 'B012', cle_ban: BARRAUD.cle_ban });
    expect(barraud.qualite.drapeaux).toEqual(expect.arrayContaining(['prix_atypique', 'doublon_probable']));
    expect(barraud.indicateurs.prix_atypique).toBe(true);
    expect(res.headers['svc-donnees-du']).toBe(dates[0]);
  });

  it.skipIf(!hasAbzac)(`pages with curseur, and refuses a tampered or foreign cursor${SKIP}`, async () => {
    const seen: string[] = [];
    let url = '/ventes?insee=33001&limite=20';
    const sizes: number[] = [];
    let cursor: string | null = null;
    let first: string | null = null;
    do {
      const res = await get(cursor ? `${url}&curseur=${encodeURIComponent(cursor)}` : url);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      sizes.push(body.donnees.length);
      expect(body.credits.debites).toBe(body.donnees.length);
      seen.push(...body.donnees.map((m: { id_mutation: string }) => m.id_mutation));
      cursor = body.curseur_suivant;
      first ??= cursor;
    } while (cursor);
    expect(sizes).toEqual([20, 20, 10]);
    expect(new Set(seen).size).toBe(50);
    expect(await debits('ventes')).toBe(100);

    const tampered = first!.slice(0, -2) + (first!.endsWith('A') ? 'BB' : 'AA');
    const bad = await get(`${url}&curseur=${encodeURIComponent(tampered)}`);
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({
      code: 'parametres_invalides',
      erreurs: [{ champ: 'curseur', emplacement: 'requete' }],
    });
    url = '/ventes?insee=33001&limite=20&type=maison';
    const foreign = await get(`${url}&curseur=${encodeURIComponent(first!)}`);
    expect(foreign.statusCode).toBe(400);
    expect(await debits('ventes')).toBe(100);
  });

  it.skipIf(!hasAbzac)(`applies filters after reading: a page may hold fewer than limite${SKIP}`, async () => {
    const res = await get('/ventes?insee=33001&limite=20&type=maison&prix_min=100000');
    const body = res.json();
    expect(body.donnees.length).toBeLessThan(20);
    expect(body.donnees.length).toBeGreaterThan(0);
    for (const m of body.donnees) {
      expect(m.locaux.some((l: { type: string }) => l.type === 'maison')).toBe(true);
      expect(m.valeur_fonciere).toBeGreaterThanOrEqual(100000);
    }
    expect(body.curseur_suivant).not.toBeNull();
    expect(body.credits.debites).toBe(body.donnees.length);
  });

  it.skipIf(!hasAbzac)(`sorts by distance around a point, or by date${SKIP}`, async () => {
    // The flats of 2021-530714, 74 rue du Docteur Texier.
    const near = await get('/ventes?lat=45.017051&lon=-0.131251&rayon_m=1000&limite=50');
    expect(near.statusCode, near.body).toBe(200);
    const body = near.json();
    expect(body.recherche).toEqual({
      mode: 'point',
      tri: 'distance',
      insee: null,
      lat: 45.017051,
      lon: -0.131251,
      rayon_m: 1000,
    });
    const distances = body.donnees.map((m: { distance_m: number }) => m.distance_m);
    expect(body.donnees[0]).toMatchObject({ id_mutation: '2021-530714', distance_m: 0 });
    expect(distances).toEqual([...distances].sort((a, b) => a - b));
    expect(Math.max(...distances)).toBeLessThanOrEqual(1000);
    expect(distances.length).toBeGreaterThan(3);
    expect(distances.length).toBeLessThan(50);

    const byDate = (await get('/ventes?lat=45.017051&lon=-0.131251&rayon_m=1000&limite=50&tri=date')).json();
    const dates = byDate.donnees.map((m: { date: string }) => m.date);
    expect(dates).toEqual([...dates].sort().reverse());
    expect(new Set(byDate.donnees.map((m: { id_mutation: string }) => m.id_mutation))).toEqual(
      new Set(body.donnees.map((m: { id_mutation: string }) => m.id_mutation)),
    );

    // Paged by distance: the same mutations, in the same order.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(
        `/ventes?lat=45.017051&lon=-0.131251&rayon_m=1000&limite=3${cursor ? `&curseur=${encodeURIComponent(cursor)}` : ''}`,
      );
      paged.push(...res.json().donnees.map((m: { id_mutation: string }) => m.id_mutation));
      cursor = res.json().curseur_suivant;
    } while (cursor);
    expect(paged).toEqual(body.donnees.map((m: { id_mutation: string }) => m.id_mutation));
  });

  it.skipIf(!hasAbzac)(`reads one mutation by id; an unknown id is 404 without debit${SKIP}`, async () => {
    const before = await debits('ventes');
    const one = await get('/ventes/2021-547818');
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({
      recherche: { mode: 'mutation' },
      donnees: [{ id_mutation: '2021-547818', prix_m2: 2011.63 }],
      credits: { debites: 1 },
    });
    const none = await get('/ventes/2021-000000');
    expect(none.statusCode).toBe(404);
    expect(none.json().code).toBe('ressource_absente');
    expect(await debits('ventes')).toBe(before + 1);
  });

  it('refuses a search without point nor commune, and a distance sort without a point', async () => {
    expect((await get('/ventes')).statusCode).toBe(400);
    expect((await get('/ventes?lat=45')).json().erreurs[0].champ).toBe('lon');
    expect((await get('/ventes?insee=33001&tri=distance')).json().erreurs[0].champ).toBe('tri');
    expect((await get('/ventes?lat=45&lon=0&rayon_m=5000')).statusCode).toBe(400);
    const unknown = await get('/ventes?insee=99999');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('commune_introuvable');
  });
});

describe('ventes_adresse', () => {
  it.skipIf(!hasAbzac)(`answers a parcel of the Abzac file, 5 credits${SKIP}`, async () => {
    const res = await get('/parcelles/33001000ab0107/ventes');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      cle_ban: null,
      id_parcelle: '33001000AB0107',
      rattachement: 'parcelle',
      adresse: null,
      parcelles_lues: ['33001000AB0107'],
      resume: { n: 1, n_2021_et_apres: 1, n_2018_2020: 0, derniere: { date: '2021-05-10', prix: 153000 } },
      millesimes: { premier: 2021, dernier: 2021 },
      donnees_du: expect.stringMatching(/^2021-12-\d\d$/),
      credits: { debites: 5 },
    });
    expect(body.mutations).toHaveLength(1);
    expect(body.mutations[0]).toMatchObject({
      id_mutation: '2021-530714',
      rattachement: 'parcelle',
      surface_logements: 200,
      prix_m2: 765,
      indicateurs: { logements: 2, vente_en_bloc: true, avec_dependance: true },
    });
    expect(body.mutations[0].qualite.drapeaux).toEqual(expect.arrayContaining(['vente_en_bloc']));
    expect(body.limites.length).toBeGreaterThan(0);
  });

  it.skipIf(!hasAbzac)(`finds a sale by any of its parcels, not only its main one${SKIP}`, async () => {
    // 2021-538235 sold five parcels of section ZI; its main parcel is one of them.
    const ids = ['33001000ZI0113', '33001000ZI0117', '33001000ZI0118', '33001000ZI0253', '33001000ZI0415'];
    for (const id of ids) {
      const res = await get(`/parcelles/${id}/ventes`);
      expect(res.statusCode, id).toBe(200);
      expect(res.json().mutations.map((m: { id_mutation: string }) => m.id_mutation)).toContain('2021-538235');
    }
  });

  it.skipIf(!hasAbzac)(`answers 404 without debit for a parcel without sale${SKIP}`, async () => {
    const before = await debits('ventes_adresse');
    const restants = (await t.admin('GET', `/organisations/${org.id}/releve?limite=1`)).body.solde.restants;
    const res = await get('/parcelles/33001000ZZ9999/ventes');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/problem\+json/);
    expect(res.json()).toMatchObject({ code: 'ressource_absente' });
    expect(await debits('ventes_adresse')).toBe(before);
    expect((await t.admin('GET', `/organisations/${org.id}/releve?limite=1`)).body.solde.restants).toBe(restants);
    expect((await get('/parcelles/1234/ventes')).statusCode).toBe(400);
  });

  it.skipIf(!hasAbzac)(
    `reads a BAN number: by number and parcel from 2021, by position for 2018-2020${SKIP}`,
    async () => {
      const file = path.join(dir, 'voisins.csv');
      await writeFile(
        file,
        [
          HEADER,
          // On the number's parcel, with another number: attached by parcel.
          etalab({
            id: '2022-100',
            date: '2022-06-01',
            type: 'Maison',
            surface: '90',
            valeur: '150000',
            parcelle: '33001000AC0495',
          }),
          // 2019, 2 m from the number: attached by position.
          etalab({
            id: '2019-200',
            date: '2019-04-02',
            type: 'Maison',
            surface: '80',
            valeur: '120000',
            parcelle: '33001000AC0999',
            lat: '45.02228',
            lon: '-0.14993',
          }),
          // 2019, about 140 m away: not this address.
          etalab({
            id: '2019-300',
            date: '2019-05-02',
            type: 'Maison',
            surface: '80',
            valeur: '120000',
            parcelle: '33001000AC0998',
            lat: '45.0235',
            lon: '-0.14995',
          }),
        ].join('\n'),
      );
      await importDvf(t.db, file);
      const res = await get(`/adresses/${BARRAUD.cle_ban}/ventes`);
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({
        cle_ban: BARRAUD.cle_ban,
        id_parcelle: null,
        rattachement: 'numero',
        adresse: { numero: '6 ter', voie: 'Barraud', code_postal: '33230', insee: '33001', commune: 'Abzac' },
        parcelles_lues: BARRAUD.parcelles,
        resume: {
          n: 3,
          n_2021_et_apres: 2,
          n_2018_2020: 1,
          derniere: { date: '2022-06-01', prix: 150000, prix_m2: 1666.67 },
        },
        millesimes: { premier: 2019, dernier: 2022 },
        credits: { debites: 5 },
      });
      expect(
        body.mutations.map((m: { id_mutation: string; rattachement: string }) => [m.id_mutation, m.rattachement]),
      ).toEqual([
        ['2022-100', 'parcelle'],
        ['2021-527130', 'numero'],
        ['2019-200', 'position'],
      ]);
      const ancienne = body.mutations[2];
      expect(ancienne.qualite.drapeaux).toContain('rattachement_incertain');
      expect(ancienne.distance_m).toBeGreaterThan(0);
      expect(ancienne.distance_m).toBeLessThanOrEqual(15);
      expect(body.limites.join(' ')).toMatch(/2018-2020 rattachées par position/);

      const recent = (await get(`/adresses/${BARRAUD.cle_ban}/ventes?inclure_2018_2020=false`)).json();
      expect(recent.resume).toMatchObject({ n: 2, n_2018_2020: 0 });
      expect(recent.millesimes).toEqual({ premier: 2021, dernier: 2022 });
      const wider = (
        await get(`/adresses/${BARRAUD.cle_ban}/ventes?rayon_position_m=100&depuis=2019-01-01&jusqu_a=2019-12-31`)
      ).json();
      expect(wider.mutations.map((m: { id_mutation: string }) => m.id_mutation)).toEqual(['2019-200']);
    },
  );

  it('answers adresse_introuvable for an unknown BAN key, without debit', async () => {
    const before = await debits('ventes_adresse');
    const res = await get('/adresses/33001_zzzz_00001/ventes');
    expect(res.statusCode).toBe(404);
    expect(res.json().code).toBe('adresse_introuvable');
    expect(await debits('ventes_adresse')).toBe(before);
  });
});

describe('Strasbourg (67482): Alsace-Moselle is not in DVF', () => {
  it('answers ventes in the commune with an empty list and the explanation, for 0 credit', async () => {
    const res = await get('/ventes?insee=67482');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ donnees: [], curseur_suivant: null, credits: { debites: 0 } });
    expect(res.json().limites[0]).toMatch(/Alsace-Moselle.*n’est pas dans DVF.*livre foncier/);
  });

  it('says it around a point of Strasbourg too', async () => {
    const res = await get('/ventes?lat=48.5834&lon=7.7458');
    expect(res.statusCode).toBe(200);
    expect(res.json().donnees).toEqual([]);
    expect(res.json().limites[0]).toMatch(/Alsace-Moselle/);
  });

  it('answers ventes_adresse with a 404 that explains it, without debit', async () => {
    const before = await debits('ventes_adresse');
    for (const url of ['/parcelles/67482000AB0001/ventes', '/adresses/67482_1234_00001/ventes']) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().code).toBe('ressource_absente');
      expect(res.json().detail).toMatch(/Alsace-Moselle \(Moselle 57, Bas-Rhin 67, Haut-Rhin 68\) n’est pas dans DVF/);
    }
    expect(await debits('ventes_adresse')).toBe(before);
  });
});

describe('the catalogue entries', () => {
  it('declare the tools, prices and paths of the specification', () => {
    const spec = path.resolve('../shared/spec/catalogue.json');
    const declared = dvfOperations.map((o) => [o.tool, o.variant ?? null, o.method, o.path, o.credits, o.unit]);
    expect(declared).toEqual([
      ['ventes_adresse', null, 'GET', '/adresses/{cle_ban}/ventes', 5, 'appel'],
      ['ventes_adresse', 'parcelle', 'GET', '/parcelles/{id_parcelle}/ventes', 5, 'appel'],
      ['ventes', null, 'GET', '/ventes', 1, 'element'],
      ['ventes', 'mutation', 'GET', '/ventes/{id_mutation}', 1, 'element'],
    ]);
    if (!existsSync(spec)) return;
    const catalogue = JSON.parse(readFileSync(spec, 'utf8')) as {
      operations: Array<{ tool: string; paths: string[] }>;
    };
    for (const op of dvfOperations) {
      expect(catalogue.operations.find((o) => o.tool === op.tool)?.paths).toContain(op.path);
    }
  });
});
