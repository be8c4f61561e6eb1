import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAnnonces } from '../../domain/annonces/import.ts';
import { importDvf } from '../../domain/dvf/import.ts';
import { construireLac } from '../../domain/jeux/lac.ts';
import { creneauDe, dansCreneauLourd, DELAIS_BASE } from '../../domain/jeux/requete.ts';
import { JEUX, sourceComplete } from '../../domain/jeux/registre.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { attendues, quantile, type Attendue } from '../support/dvf-attendues.ts';
import { appartement, fichierReleves } from '../unit/annonces/support.ts';
import { etalab, HEADER } from '../unit/dvf/fixtures.ts';

// The Datasets domain as a client calls it, on the real DVF sample of Abzac (33001): rows, filters and cursors are
// compared with the same reads computed here from the CSV file itself; medians with medians computed from the file.

const ABZAC = path.resolve(import.meta.dirname, '../../../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasAbzac = existsSync(ABZAC);
const SKIP = hasAbzac ? '' : ' (skipped: ../shared/data/dvf is absent)';

let t: TestApp;
let dir: string;
let org: { id: string; cle: string };
let test: string;
/** The service's clock, shifted by the tests (the evening window). */
let decalageMs = 0;

const get = (url: string, cle = org.cle) => t.call('GET', url, cle);

// The rows of `dvf` computed from the CSV, by the registry's definition: test/support/dvf-attendues.ts.

const ATTENDUES = hasAbzac ? attendues(ABZAC) : [];

/** A row as compared: the fields the CSV gives. */
const forme = (r: Record<string, unknown>): Attendue => ({
  id_mutation: r.id_mutation as string,
  date_mutation: r.date_mutation as string,
  rang: r.rang as number,
  valeur_fonciere: r.valeur_fonciere as number | null,
  type_local: r.type_local as string | null,
  surface_reelle_bati: r.surface_reelle_bati as number | null,
  nombre_pieces_principales: r.nombre_pieces_principales as number | null,
  surface_terrain: r.surface_terrain as number | null,
});

/** Every row a read gives, page after page through its cursor. */
async function toutLire(
  requete: string,
  limite: number,
): Promise<{ lignes: Array<Record<string, unknown>>; pages: number }> {
  const lignes: Array<Record<string, unknown>> = [];
  let curseur: string | null = null;
  let pages = 0;
  do {
    const url = `${requete}&limite=${limite}${curseur ? `&curseur=${encodeURIComponent(curseur)}` : ''}`;
    const res = await get(url);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    lignes.push(...body.lignes);
    curseur = body.curseur_suivant;
    pages++;
    expect(pages).toBeLessThan(100);
  } while (curseur);
  return { lignes, pages };
}

async function debits(operation: string): Promise<number> {
  const res = await t.admin('GET', `/organisations/${org.id}/releve?limite=200`);
  return (res.body.mouvements as Array<{ genre: string; operation: string; credits: number }>)
    .filter((m) => m.genre === 'debit' && m.operation === operation)
    .reduce((s, m) => s + Math.abs(m.credits), 0);
}

/**
 * Moves the service's clock forward to the next time it is `heure`:`minute` in Paris. Only ever forward: the
 * per-minute quota counts calendar minutes of that clock.
 */
function avancerVers(heure: number, minute: number): void {
  const maintenant = new Date(Date.now() + decalageMs);
  const paris = new Intl.DateTimeFormat('fr-FR', {
    timeZone: 'Europe/Paris',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(maintenant);
  const h = Number(paris.find((p) => p.type === 'hour')!.value);
  const m = Number(paris.find((p) => p.type === 'minute')!.value);
  const minutes = (heure * 60 + minute - (h * 60 + m) + 1440) % 1440 || 1440;
  decalageMs += minutes * 60_000 - maintenant.getSeconds() * 1000;
}

beforeAll(async () => {
  t = await createTestApp({ services: { now: () => new Date(Date.now() + decalageMs) } });
  // Mid-morning in Paris, whatever the hour the tests run: heavy datasets are read, aggregates computed.
  avancerVers(10, 0);
  dir = await mkdtemp(path.join(tmpdir(), 'jeux-'));
  if (hasAbzac) await importDvf(t.db, ABZAC);
  org = await t.organisation({ acces: 'usage', quota_minute: 100_000 });
  await t.admin('POST', `/organisations/${org.id}/credits`, { credits: 5000, motif: 'tests des jeux' });
  const o = await t.organisation({ acces: 'usage', quota_minute: 100_000 });
  test = (await t.admin('POST', `/organisations/${o.id}/cles`, { mode: 'test' })).body.cle;
}, 300_000);

afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the list and the schemas', () => {
  it('lists the 31 datasets of the specification, in its order, the unavailable ones with their reason', async () => {
    const res = await get('/jeux');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.jeux.map((j: { jeu: string }) => j.jeu)).toEqual(
      'annonces, evenements_prix, diffusions, communes, prix_iris, loyers, mutations, indice_travaux, adresses, dvf, dvf_ancien, ban, dpe_existant, dpe_neuf, dpe_tertiaire, dpe_ancien, audits, coproprietes, permis_logements, permis_locaux, permis_demolir, permis_amenager, bodacc, lovac, plu, signaux_communes, marche_commune, agences_commune, sirene_immobilier, annonces_archives, biens'.split(
        ', ',
      ),
    );
    const lovac = body.jeux.find((j: { jeu: string }) => j.jeu === 'lovac');
    expect(lovac.disponible).toBe(false);
    expect(lovac.raison).toMatch(/LOVAC/);
    expect(body.jeux.find((j: { jeu: string }) => j.jeu === 'dvf').disponible).toBe(true);
    expect(body.credits.debites).toBe(0);
  });

  it.skipIf(!hasAbzac)(
    `gives dvf's schema: Etalab columns, types, operators, index, sort key, volume, date${SKIP}`,
    async () => {
      const res = await get('/jeux/dvf/schema');
      expect(res.statusCode, res.body).toBe(200);
      const s = res.json();
      expect(s.nature).toBe('public_brut');
      expect(s.base).toBe('servie');
      expect(s.large).toBe(true);
      expect(s.creneau_lourd).toBe(true);
      expect(s.cle_tri).toEqual(['date_mutation', 'id_mutation', 'rang']);
      const noms = s.colonnes.map((c: { nom: string }) => c.nom);
      for (const nom of [
        'id_mutation',
        'date_mutation',
        'nature_mutation',
        'valeur_fonciere',
        'code_commune',
        'type_local',
        'surface_reelle_bati',
        'nombre_pieces_principales',
        'longitude',
        'latitude',
      ]) {
        expect(noms).toContain(nom);
      }
      const commune = s.colonnes.find((c: { nom: string }) => c.nom === 'code_commune');
      expect(commune).toMatchObject({ type: 'texte', indexee: true, groupable: true });
      expect(commune.operateurs).toEqual(['eq', 'in', 'lt', 'lte', 'gt', 'gte', 'entre', 'prefixe', 'nul']);
      expect(s.colonnes.find((c: { nom: string }) => c.nom === 'valeur_fonciere')).toMatchObject({
        type: 'nombre',
        mesurable: true,
        indexee: false,
      });
      expect(s.donnees_du).toMatch(/^2021-\d\d-\d\d$/);
      // Estimated from the mutations imported and their rows on a sample: exact on a sample this small.
      expect(s.volume_jeu).toBe(ATTENDUES.length);
      expect(s.credits.debites).toBe(0);
    },
  );

  it('publishes the dataset names of the registry as the enum of `jeu`, and filtre as a deepObject', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    for (const chemin of ['/api/v1/jeux/{jeu}', '/api/v1/jeux/{jeu}/agregats', '/api/v1/jeux/{jeu}/schema']) {
      const jeu = doc.paths[chemin].get.parameters.find((p: { name: string }) => p.name === 'jeu');
      expect(jeu.schema.enum, chemin).toEqual(JEUX.map((j) => j.nom));
    }
    const filtre = doc.paths['/api/v1/jeux/{jeu}'].get.parameters.find((p: { name: string }) => p.name === 'filtre');
    expect(filtre).toMatchObject({ in: 'query', style: 'deepObject', explode: true });
  });

  it('declares every available dataset with a unique, known sort key and real columns', () => {
    for (const jeu of JEUX) {
      if ('indisponible' in jeu) continue;
      const noms = jeu.colonnes.map((c) => c.nom);
      expect(new Set(noms).size, jeu.nom).toBe(noms.length);
      for (const cle of jeu.cle_tri) expect(noms, jeu.nom).toContain(cle);
      if (jeu.large)
        expect(
          jeu.colonnes.some((c) => c.indexee),
          jeu.nom,
        ).toBe(true);
    }
  });
});

describe('every available dataset', () => {
  it('reads, aggregates and exports through its declared SQL', async () => {
    for (const jeu of JEUX) {
      if ('indisponible' in jeu) continue;
      const indexee = jeu.colonnes.find((c) => c.indexee)!;
      const valeur = indexee.type === 'entier' ? '1' : '33001';
      const lu = await get(`/jeux/${jeu.nom}?filtre[${indexee.nom}][in]=${valeur},2&limite=2`);
      expect(lu.statusCode, `${jeu.nom} ${lu.body}`).toBe(200);
      const groupe = jeu.colonnes.find((c) => ['texte', 'entier', 'booleen', 'date'].includes(c.type))!;
      const mesure = jeu.colonnes.find((c) => c.type === 'nombre' || c.type === 'entier');
      const agregat = await get(
        `/jeux/${jeu.nom}/agregats?grouper=${groupe.nom}${mesure ? `&mesures=mediane:${mesure.nom},max:${mesure.nom}` : ''}`,
      );
      expect(agregat.statusCode, `${jeu.nom} ${agregat.body}`).toBe(200);
      const { sql } = sourceComplete(jeu.nom);
      await t.db.query(`SELECT * FROM (${sql}) s LIMIT 1`);
    }
  });
});

describe.skipIf(!hasAbzac)(`lire_jeu on the DVF of Abzac${SKIP}`, () => {
  it('returns the rows of Abzac sorted by the sort key, and the cursor reads every row exactly once', async () => {
    const res = await get('/jeux/dvf?filtre[code_commune][eq]=33001&limite=10');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ jeu: 'dvf', base: 'servie', nature: 'public_brut', n: 10 });
    expect(body.cle_tri).toEqual(['date_mutation', 'id_mutation', 'rang']);
    expect(body.lignes.map(forme)).toEqual(ATTENDUES.slice(0, 10));
    expect(body.curseur_suivant).toEqual(expect.any(String));
    expect(body.retrait_particuliers).toMatch(/aucun nom/);

    const { lignes, pages } = await toutLire('/jeux/dvf?filtre[code_commune][eq]=33001', 10);
    expect(pages).toBe(Math.ceil(ATTENDUES.length / 10));
    expect(lignes.map(forme)).toEqual(ATTENDUES);
    const cles = lignes.map((l) => `${l.id_mutation}#${l.rang}`);
    expect(new Set(cles).size).toBe(cles.length);
    expect(new Set(lignes.map((l) => l.id_mutation)).size).toBe(50);
  });

  const cas: Array<[string, (a: Attendue) => boolean]> = [
    ['filtre[type_local][eq]=Maison', (a) => a.type_local === 'Maison'],
    ['filtre[type_local][in]=Maison,Appartement', (a) => a.type_local === 'Maison' || a.type_local === 'Appartement'],
    ['filtre[valeur_fonciere][lt]=100000', (a) => a.valeur_fonciere !== null && a.valeur_fonciere < 100000],
    ['filtre[valeur_fonciere][lte]=150000', (a) => a.valeur_fonciere !== null && a.valeur_fonciere <= 150000],
    ['filtre[valeur_fonciere][gt]=200000', (a) => a.valeur_fonciere !== null && a.valeur_fonciere > 200000],
    ['filtre[valeur_fonciere][gte]=175000', (a) => a.valeur_fonciere !== null && a.valeur_fonciere >= 175000],
    [
      'filtre[date_mutation][entre]=2021-03-01,2021-06-30',
      (a) => a.date_mutation >= '2021-03-01' && a.date_mutation <= '2021-06-30',
    ],
    ['filtre[id_mutation][prefixe]=2021-5271', (a) => a.id_mutation.startsWith('2021-5271')],
    ['filtre[type_local][nul]=true', (a) => a.type_local === null],
    ['filtre[surface_reelle_bati][nul]=false', (a) => a.surface_reelle_bati !== null],
    [
      'filtre[nombre_pieces_principales][gte]=4&filtre[type_local][eq]=Maison',
      (a) => a.type_local === 'Maison' && (a.nombre_pieces_principales ?? -1) >= 4,
    ],
  ];
  for (const [filtre, garde] of cas) {
    it(`${filtre}: the rows the same filter keeps in the file`, async () => {
      const attendu = ATTENDUES.filter(garde);
      expect(attendu.length).toBeGreaterThan(0);
      const { lignes } = await toutLire(`/jeux/dvf?filtre[code_commune][eq]=33001&${filtre}`, 7);
      expect(lignes.map(forme)).toEqual(attendu);
    });
  }

  it('serves the columns asked, with the sort key always', async () => {
    const res = await get('/jeux/dvf?filtre[code_commune][eq]=33001&champs=valeur_fonciere,type_local&limite=3');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.colonnes.map((c: { nom: string }) => c.nom)).toEqual([
      'id_mutation',
      'date_mutation',
      'valeur_fonciere',
      'rang',
      'type_local',
    ]);
    expect(Object.keys(body.lignes[0]).sort()).toEqual([
      'date_mutation',
      'id_mutation',
      'rang',
      'type_local',
      'valeur_fonciere',
    ]);
  });

  it('debits 1 credit per 10 rows of a public dataset (10 → 1, 11 → 2), 1 per row of a computed one', async () => {
    const avant = await debits('lire_jeu');
    const dix = await get('/jeux/dvf?filtre[code_commune][eq]=33001&filtre[type_local][nul]=true&limite=10');
    expect(dix.json().n).toBe(10);
    expect(dix.json().credits.debites).toBe(1);
    const onze = await get('/jeux/dvf?filtre[code_commune][eq]=33001&filtre[type_local][nul]=true&limite=11');
    expect(onze.json().n).toBe(11);
    expect(onze.json().credits.debites).toBe(2);
    const mutations = await get('/jeux/mutations?filtre[code_commune][eq]=33001&limite=3');
    expect(mutations.statusCode, mutations.body).toBe(200);
    expect(mutations.json()).toMatchObject({ nature: 'calcule_svc', n: 3, credits: { debites: 3 } });
    expect(mutations.headers['svc-credits-debites']).toBe('3');
    expect((await debits('lire_jeu')) - avant).toBe(6);
  });
});

describe.skipIf(!hasAbzac)(`agreger_jeu on the DVF of Abzac${SKIP}`, () => {
  it('grouper=type_local&mesures=mediane:valeur_fonciere equals the medians computed from the file', async () => {
    const res = await get(
      '/jeux/dvf/agregats?grouper=type_local&mesures=mediane:valeur_fonciere&filtre[code_commune][eq]=33001',
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ jeu: 'dvf', base: 'servie', grouper: ['type_local'], tronque: false });
    expect(body.mesures).toEqual([
      { nom: 'mediane_valeur_fonciere', fonction: 'mediane', colonne: 'valeur_fonciere', q: null },
    ]);
    const types = [...new Set(ATTENDUES.map((a) => a.type_local))];
    expect(body.n_groupes).toBe(types.length);
    const attendus = types
      .map((type) => {
        const lignes = ATTENDUES.filter((a) => a.type_local === type);
        const valeurs = lignes.map((a) => a.valeur_fonciere).filter((v): v is number => v !== null);
        return { type, n: lignes.length, mediane: quantile(valeurs, 0.5) };
      })
      .sort((a, b) => b.n - a.n);
    expect(body.groupes.map((g: any) => g.n)).toEqual(attendus.map((a) => a.n));
    for (const a of attendus) {
      const g = body.groupes.find((x: any) => x.cles.type_local === a.type);
      expect(g, String(a.type)).toBeDefined();
      expect(g.n).toBe(a.n);
      expect(g.mesures.mediane_valeur_fonciere).toBeCloseTo(a.mediane!, 6);
      expect(g.drapeaux).toEqual(a.n < 5 ? ['peu_d_observations'] : []);
    }
    expect(body.credits.debites).toBe(5);
  });

  it('takes the aliases and continuous quantiles, and flags small groups without hiding them', async () => {
    const res = await get(
      '/jeux/dvf/agregats?grouper=type_local,nombre_pieces_principales&mesures=count:valeur_fonciere,avg:valeur_fonciere,quantile:valeur_fonciere:0.9,min:surface_reelle_bati,max:surface_reelle_bati,sum:surface_reelle_bati&filtre[code_commune][eq]=33001&filtre[type_local][eq]=Maison&limite_groupes=2',
    );
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    const maisons = ATTENDUES.filter((a) => a.type_local === 'Maison');
    const parPieces = new Map<number | null, Attendue[]>();
    for (const m of maisons)
      parPieces.set(m.nombre_pieces_principales, [...(parPieces.get(m.nombre_pieces_principales) ?? []), m]);
    const groupes = [...parPieces.entries()].sort((a, b) => b[1].length - a[1].length || (a[0] ?? 99) - (b[0] ?? 99));
    expect(body.n_groupes).toBe(groupes.length);
    expect(body.tronque).toBe(groupes.length > 2);
    expect(body.groupes).toHaveLength(Math.min(2, groupes.length));
    for (const [i, g] of body.groupes.entries()) {
      const [pieces, lignes] = groupes[i]!;
      expect(g.cles).toEqual({ type_local: 'Maison', nombre_pieces_principales: pieces });
      const valeurs = lignes.map((a) => a.valeur_fonciere).filter((v): v is number => v !== null);
      const surfaces = lignes.map((a) => a.surface_reelle_bati).filter((v): v is number => v !== null);
      expect(g.mesures.nombre_valeur_fonciere).toBe(valeurs.length);
      expect(g.mesures.moyenne_valeur_fonciere).toBeCloseTo(valeurs.reduce((s, v) => s + v, 0) / valeurs.length, 6);
      expect(g.mesures['quantile_valeur_fonciere_0.9']).toBeCloseTo(quantile(valeurs, 0.9)!, 6);
      expect(g.mesures.min_surface_reelle_bati).toBe(Math.min(...surfaces));
      expect(g.mesures.max_surface_reelle_bati).toBe(Math.max(...surfaces));
      expect(g.mesures.somme_surface_reelle_bati).toBeCloseTo(
        surfaces.reduce((s, v) => s + v, 0),
        6,
      );
      expect(g.drapeaux).toEqual(lignes.length < 5 ? ['peu_d_observations'] : []);
    }
  });
});

describe('refusals', () => {
  const refus = async (url: string, status: number, code: string) => {
    const res = await get(url);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.json().code).toBe(code);
    return res.json();
  };

  it('refuses an unknown column and an unknown operator, field by field', async () => {
    const body = await refus(
      '/jeux/dvf?filtre[code_commune][eq]=33001&filtre[prix][eq]=1&filtre[type_local][contient]=M',
      400,
      'parametres_invalides',
    );
    expect(body.erreurs.map((e: { champ: string }) => e.champ)).toEqual([
      'filtre[prix][eq]',
      'filtre[type_local][contient]',
    ]);
  });

  it('refuses a value that is not of the column’s type', async () => {
    const body = await refus(
      '/jeux/dvf?filtre[code_commune][eq]=33001&filtre[valeur_fonciere][gt]=beaucoup&filtre[date_mutation][eq]=2021-02-30',
      400,
      'parametres_invalides',
    );
    expect(body.erreurs.map((e: { champ: string }) => e.champ)).toEqual([
      'filtre[valeur_fonciere][gt]',
      'filtre[date_mutation][eq]',
    ]);
  });

  it('refuses 13 filters', async () => {
    const colonnes = [
      'valeur_fonciere',
      'surface_reelle_bati',
      'nombre_pieces_principales',
      'surface_terrain',
      'rang',
      'adresse_numero',
    ];
    const douze = colonnes.flatMap((c) => [`filtre[${c}][gte]=0`, `filtre[${c}][lt]=100000000`]);
    const url = `/jeux/dvf?filtre[code_commune][eq]=33001&${douze.slice(1).join('&')}`;
    // Twelve filters are read...
    expect((await get(url)).statusCode).toBe(200);
    // ...thirteen are not.
    const body = await refus(`${url}&${douze[0]}`, 400, 'parametres_invalides');
    expect(body.erreurs).toEqual([
      expect.objectContaining({ champ: 'filtre', message: expect.stringMatching(/13 filtres/) }),
    ]);
  });

  it('refuses a large dataset read without a filter on an indexed column', async () => {
    const body = await refus('/jeux/dvf?filtre[type_local][eq]=Maison', 400, 'parametres_invalides');
    expect(body.erreurs[0]).toMatchObject({ champ: 'filtre', emplacement: 'requete' });
    expect(body.erreurs[0].message).toMatch(/code_commune/);
    await refus('/jeux/dvf', 400, 'parametres_invalides');
  });

  it.skipIf(!hasAbzac)(`refuses a forged cursor, and one issued for other filters${SKIP}`, async () => {
    const res = await get('/jeux/dvf?filtre[code_commune][eq]=33001&limite=5');
    const curseur: string = res.json().curseur_suivant;
    const [charge, signature] = curseur.split('.');
    const position = JSON.parse(Buffer.from(charge!, 'base64url').toString());
    position.p[1] = '2021-999999';
    const faux = `${Buffer.from(JSON.stringify(position)).toString('base64url')}.${signature}`;
    const a = await refus(
      `/jeux/dvf?filtre[code_commune][eq]=33001&limite=5&curseur=${faux}`,
      400,
      'parametres_invalides',
    );
    expect(a.erreurs[0].champ).toBe('curseur');
    await refus(
      `/jeux/dvf?filtre[code_commune][eq]=33001&filtre[type_local][eq]=Maison&limite=5&curseur=${curseur}`,
      400,
      'parametres_invalides',
    );
    await refus(
      `/jeux/mutations?filtre[code_commune][eq]=33001&limite=5&curseur=${curseur}`,
      400,
      'parametres_invalides',
    );
  });

  it('refuses an unavailable dataset with its reason (404, nothing debited)', async () => {
    const body = await refus('/jeux/lovac?filtre[insee][eq]=33001', 404, 'ressource_absente');
    expect(body.detail).toMatch(/LOVAC/);
    await refus('/jeux/coproprietes/agregats?grouper=x', 404, 'ressource_absente');
    const schema = await get('/jeux/lovac/schema');
    expect(schema.statusCode).toBe(200);
    expect(schema.json()).toMatchObject({ disponible: false, colonnes: [] });
  });

  it('refuses an unknown parameter, an unknown dataset, grouping or measuring what cannot be', async () => {
    await refus('/jeux/dvf?filtre[code_commune][eq]=33001&tri=prix', 400, 'parametres_invalides');
    await refus('/jeux/inconnu', 400, 'parametres_invalides');
    await refus('/jeux/dvf/agregats?grouper=valeur_fonciere', 400, 'parametres_invalides');
    await refus('/jeux/dvf/agregats?grouper=type_local,code_commune,date_mutation,rang', 400, 'parametres_invalides');
    await refus('/jeux/dvf/agregats?mesures=mediane:type_local', 400, 'parametres_invalides');
    await refus('/jeux/dvf/agregats?mesures=quantile:valeur_fonciere:1.5', 400, 'parametres_invalides');
    await refus('/jeux/dvf/agregats?mesures=variance:valeur_fonciere', 400, 'parametres_invalides');
  });

  it.skipIf(!hasAbzac)(`refuses a heavy dataset 20:30-midnight Paris time, and serves it before${SKIP}`, async () => {
    try {
      avancerVers(20, 29);
      expect((await get('/jeux/dvf?filtre[code_commune][eq]=33001&filtre[rang][eq]=1&limite=4')).statusCode).toBe(200);
      avancerVers(20, 30);
      const body = await refus(
        '/jeux/dvf?filtre[code_commune][eq]=33001&filtre[rang][eq]=2&limite=4',
        503,
        'creneau_reserve',
      );
      expect(body.detail).toMatch(/20 h 30/);
      avancerVers(23, 59);
      await refus('/jeux/dvf?filtre[code_commune][eq]=33001&filtre[rang][eq]=3&limite=4', 503, 'creneau_reserve');
      // A light dataset is read at any hour.
      expect((await get('/jeux/communes?filtre[insee][eq]=33001')).statusCode).toBe(200);
    } finally {
      avancerVers(0, 0);
    }
    expect((await get('/jeux/dvf?filtre[code_commune][eq]=33001&filtre[rang][eq]=3&limite=4')).statusCode).toBe(200);
  });

  it('takes the window of the configuration (CRENEAU_LOURD), Paris time, or none', () => {
    const vingtEtUneHeures = new Date('2026-11-29T20:00:00Z'); // CET: 21:00 in Paris
    const minuit = new Date('2026-11-29T23:00:00Z');
    expect(dansCreneauLourd(vingtEtUneHeures)).toBe(true);
    expect(dansCreneauLourd(minuit)).toBe(false);
    expect(dansCreneauLourd(vingtEtUneHeures, creneauDe('21:30-23:00'))).toBe(false);
    expect(dansCreneauLourd(new Date('2026-07-01T19:45:00Z'), creneauDe('21:30-23:00'))).toBe(true); // CEST
    expect(dansCreneauLourd(vingtEtUneHeures, creneauDe('aucun'))).toBe(false);
  });

  it.skipIf(!hasAbzac)(
    `serves an aggregate in the evening only from memory, else 503 creneau_reserve${SKIP}`,
    async () => {
      const url =
        '/jeux/dvf/agregats?grouper=nature_mutation&mesures=somme:valeur_fonciere&filtre[code_commune][eq]=33001';
      try {
        avancerVers(15, 0);
        // Asked twice during the day: the response memory keeps what is asked again.
        expect((await get(url)).statusCode).toBe(200);
        expect((await get(url)).statusCode).toBe(200);
        avancerVers(22, 15);
        const servi = await get(url);
        expect(servi.statusCode, servi.body).toBe(200);
        expect(servi.json().groupes.length).toBeGreaterThan(0);
        await refus(`${url}&limite_groupes=7`, 503, 'creneau_reserve');
      } finally {
        avancerVers(10, 0);
      }
    },
  );

  it('answers 503 when the read outlasts the database time-out, and debits nothing', async () => {
    // The schema first: the dataset's volume and date are then in memory, and only the read meets the lock.
    expect((await get('/jeux/communes/schema')).statusCode).toBe(200);
    const avant = await debits('lire_jeu');
    const verrou = await t.db.connect();
    const delai = DELAIS_BASE.lectureMs;
    try {
      await verrou.query('BEGIN');
      await verrou.query('LOCK TABLE communes IN ACCESS EXCLUSIVE MODE');
      DELAIS_BASE.lectureMs = 300;
      const body = await refus('/jeux/communes?filtre[insee][eq]=33002', 503, 'service_indisponible');
      expect(body.detail).toMatch(/resserrez les filtres/);
    } finally {
      DELAIS_BASE.lectureMs = delai;
      await verrou.query('ROLLBACK');
      verrou.release();
    }
    expect(await debits('lire_jeu')).toBe(avant);
  });
});

describe('the sandbox and private individuals', () => {
  it('serves a pk_test_ key the frozen dataset, and refuses a territory outside it', async () => {
    // Two sales of the frozen dataset in Abzac, none of the live file's.
    const fichier = path.join(dir, 'dvf-bac.csv');
    await writeFile(
      fichier,
      [
        HEADER,
        etalab({ id: '2021-900001', date: '2021-05-01', type: 'Maison', surface: '90', valeur: '250000' }),
        etalab({ id: '2021-900002', date: '2021-06-01', type: 'Appartement', surface: '40', valeur: '120000' }),
      ].join('\n'),
    );
    await importDvf(t.db, fichier, { dataset: 'sandbox' });
    const dedans = await t.call('GET', '/jeux/dvf?filtre[code_commune][eq]=33001&filtre[type_local][nul]=false', test);
    expect(dedans.statusCode, dedans.body).toBe(200);
    expect(dedans.json().credits).toEqual({ debites: 0, restants: null });
    expect(dedans.json().lignes.map((l: { id_mutation: string }) => l.id_mutation)).toEqual([
      '2021-900001',
      '2021-900002',
    ]);
    const vivant = await get('/jeux/dvf?filtre[code_commune][eq]=33001&filtre[id_mutation][prefixe]=2021-9000');
    expect(vivant.json().lignes).toEqual([]);
    const dehors = await t.call('GET', '/jeux/dvf?filtre[code_commune][in]=33001,69123&limite=5', test);
    expect(dehors.statusCode, dehors.body).toBe(403);
    expect(dehors.json().code).toBe('hors_bac_a_sable');
    const agregat = await t.call('GET', '/jeux/mutations/agregats?filtre[code_departement][eq]=69', test);
    expect(agregat.json().code).toBe('hors_bac_a_sable');
  });

  it('never names a private seller in any listing dataset row', async () => {
    const ici = {
      insee: '33001',
      code_postal: '33230',
      position: { lat: 45.0135, lon: -0.1262 },
      precision: 'approchee',
    };
    const releves = [
      appartement({
        ...ici,
        id: '9001',
        vu_le: '2025-03-01T09:00:00Z',
        prix: 210_000,
        premiere_parution: '2025-03-01',
        annonceur: { nom: 'AGENCE DU PORT', siren: '428765432', telephone: '05 57 00 00 02', mandat: 'exclusif' },
      }),
      appartement({
        ...ici,
        id: '9002',
        vu_le: '2025-03-01T09:00:00Z',
        prix: 180_000,
        premiere_parution: '2025-03-01',
        type_vendeur: 'particulier',
        annonceur: { nom: 'Jeanne Dupuis', telephone: '06 12 34 56 78', email: 'jeanne.dupuis@example.org' },
        description: 'Appartement lumineux, appelez Mme Dupuis au 06 12 34 56 78.',
      }),
    ];
    const r = await importAnnonces(t.db, await fichierReleves(dir, 'releves.jsonl', releves), {
      maintenant: new Date('2025-03-02T00:00:00Z'),
    });
    expect(r.rejetes).toEqual([]);
    let vues = 0;
    for (const jeu of ['annonces', 'biens', 'diffusions', 'annonces_archives']) {
      const res = await get(`/jeux/${jeu}?filtre[insee][eq]=33001&limite=100`);
      expect(res.statusCode, `${jeu} ${res.body}`).toBe(200);
      expect(res.body).not.toMatch(/Dupuis|06 12 34 56 78|jeanne/i);
      for (const l of res.json().lignes) {
        vues++;
        if (l.type_vendeur !== 'pro') {
          for (const [k, v] of Object.entries(l)) if (k.startsWith('vendeur_')) expect(v, `${jeu}.${k}`).toBeNull();
        }
      }
    }
    expect(vues).toBeGreaterThanOrEqual(5);
    const annonces = (await get('/jeux/annonces?filtre[insee][eq]=33001')).json();
    expect(
      annonces.lignes.find((l: { vendeur_nom: string | null }) => l.vendeur_nom === 'AGENCE DU PORT'),
    ).toBeDefined();
    expect(annonces.lignes.filter((l: { type_vendeur: string }) => l.type_vendeur === 'particulier')).toHaveLength(1);
  });
});

describe.skipIf(!hasAbzac)(`the lake: DuckDB over a fresh Parquet edition, the same numbers${SKIP}`, () => {
  // Asked here only (the response memory would otherwise answer the second ask with PostgreSQL's result).
  const requetes = [
    '/jeux/dvf/agregats?grouper=type_local&mesures=mediane:valeur_fonciere&filtre[code_commune][eq]=33001&limite_groupes=999',
    '/jeux/dvf/agregats?grouper=type_local,nombre_pieces_principales&mesures=count:valeur_fonciere,avg:valeur_fonciere,quantile:valeur_fonciere:0.9,min:surface_reelle_bati,max:surface_reelle_bati,sum:surface_reelle_bati&filtre[type_local][in]=Maison,Appartement&limite_groupes=3',
    '/jeux/dvf/agregats?grouper=date_mutation&mesures=quantile:valeur_fonciere:0.25,mediane:surface_terrain&filtre[date_mutation][entre]=2021-02-01,2021-09-30&filtre[id_mutation][prefixe]=2021-5&filtre[type_local][nul]=true',
    '/jeux/mutations/agregats?grouper=nature_mutation,vente_en_bloc&mesures=mediane:prix_m2,moyenne:surface_logements&filtre[valeur_fonciere][gte]=1000',
    '/jeux/dvf/agregats?mesures=mediane:valeur_fonciere',
  ];

  it('gives the same groups and measures as PostgreSQL, then PostgreSQL again once the edition is stale', async () => {
    // PostgreSQL first (asked once each: the response memory keeps only what is asked again).
    const servies = [];
    for (const url of requetes) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().base).toBe('servie');
      servies.push(res.json());
    }
    for (const [i, jeu] of ['dvf', 'mutations'].entries()) {
      // The first build waits until the import's counts have all reached the statistics; then nothing moves.
      const edition = await construireLac(t.db, jeu, dir, 'live', { stabiliteMs: i === 0 ? undefined : 0 });
      expect(edition.lignes).toBeGreaterThan(0);
      expect(edition.donnees_du).toMatch(/^2021-/);
    }
    expect((await construireLac(t.db, 'dvf', dir, 'live', { stabiliteMs: 0 })).lignes).toBe(ATTENDUES.length);
    expect((await get('/jeux/dvf/schema')).json().base).toBe('lac');
    for (const [i, url] of requetes.entries()) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      const lac = res.json();
      expect(lac.base, url).toBe('lac');
      const pg = servies[i];
      expect(lac.n_groupes, url).toBe(pg.n_groupes);
      expect(lac.tronque, url).toBe(pg.tronque);
      expect(
        lac.groupes.map((g: any) => [g.cles, g.n, g.drapeaux]),
        url,
      ).toEqual(pg.groupes.map((g: any) => [g.cles, g.n, g.drapeaux]));
      for (const [j, g] of lac.groupes.entries()) {
        for (const [nom, v] of Object.entries(pg.groupes[j].mesures)) {
          if (v === null) expect(g.mesures[nom], `${url} ${nom}`).toBeNull();
          else expect(g.mesures[nom], `${url} ${nom}`).toBeCloseTo(v as number, 6);
        }
      }
    }
    // An edition built from another declaration of the dataset (an earlier release's registry) is not served.
    await t.db.query(`UPDATE jeux_lac SET declaration = 'une version précédente' WHERE jeu = 'mutations'`);
    expect((await get('/jeux/mutations/schema')).json().base).toBe('servie');
    expect((await get('/jeux/dvf/schema')).json().base).toBe('lac');
    // Any write since makes the edition stale, whatever the dates it brings: an older sale removed here. Back to
    // PostgreSQL, and its numbers, until the edition is rebuilt.
    const client = await t.db.connect();
    try {
      await client.query(
        `DELETE FROM dvf_mutations WHERE dataset = 'live' AND id_mutation = (SELECT id_mutation FROM dvf_mutations
            WHERE dataset = 'live' ORDER BY date_mutation, id_mutation LIMIT 1)`,
      );
      // Counters reach pg_stat_user_tables when the session flushes them (at the latest 10 s later when idle).
      await client.query('SELECT pg_stat_force_next_flush()');
    } finally {
      client.release();
    }
    await new Promise((r) => setTimeout(r, 100));
    const perimee = (await get(requetes[0]!.replace('limite_groupes=999', 'limite_groupes=99'))).json();
    expect(perimee.base).toBe('servie');
    const total = (g: Array<{ n: number }>) => g.reduce((a, x) => a + x.n, 0);
    expect(total(perimee.groupes)).toBeLessThan(total(servies[0].groupes));
  }, 120_000);
});
