import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { reconstruireMarche } from '../../../domain/marche/agregats.ts';
import { reconstruireDerives } from '../../../domain/marche/derives.ts';
import { marcheOperations } from '../../../domain/marche/operations.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { etalab, HEADER } from '../dvf/fixtures.ts';

const ABZAC = path.resolve('../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasAbzac = existsSync(ABZAC);
const SKIP = hasAbzac ? '' : ' (skipped: ../shared/data/dvf absent)';

/** A line of the CSV as a record of its header's names (the sample has no quoted comma). */
function lireCsv(file: string): Array<Record<string, string>> {
  const [header, ...lines] = readFileSync(file, 'utf8').trim().split(/\r?\n/);
  const names = header.split(',');
  return lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [names[i], v])));
}

const mediane = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const k = Math.floor(s.length / 2);
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
};

/**
 * The median €/m² per type of the 2021 sales of one dwelling, computed here from the file alone: the rows of a
 * mutation grouped by its id, a local counted once however many land subdivisions repeat it, a sale kept when it is a
 * `Vente` of exactly one flat or house, without business premises, at a plausible price (200-25 000 €/m²). A
 * dwelling written twice beside the same land subdivision (2021-530714: two equal flats of 100 m²) is two flats or a
 * repeated line, nobody can say: such a sale is left out.
 */
function medianesDuFichier(file: string) {
  const mutations = new Map<string, Array<Record<string, string>>>();
  for (const r of lireCsv(file)) mutations.set(r.id_mutation, [...(mutations.get(r.id_mutation) ?? []), r]);
  const prix: Record<string, number[]> = { appartement: [], maison: [] };
  for (const lignes of mutations.values()) {
    if (lignes[0].nature_mutation !== 'Vente' || !lignes[0].date_mutation.startsWith('2021')) continue;
    const locaux = new Map<string, Record<string, string>>();
    const repetees = new Set<string>();
    for (const l of lignes) {
      if (!l.type_local) continue;
      const local = [l.id_parcelle, l.type_local, l.surface_reelle_bati, l.lot1_numero].join('|');
      const ligne = [local, l.code_nature_culture, l.surface_terrain].join('|');
      if (repetees.has(ligne) && (l.type_local === 'Maison' || l.type_local === 'Appartement')) locaux.set(ligne, l);
      repetees.add(ligne);
      locaux.set(local, l);
    }
    const logements = [...locaux.values()].filter((l) => l.type_local === 'Maison' || l.type_local === 'Appartement');
    if (logements.length !== 1 || [...locaux.values()].some((l) => l.type_local.startsWith('Local'))) continue;
    const m2 = Number(lignes[0].valeur_fonciere) / Number(logements[0].surface_reelle_bati);
    if (m2 < 200 || m2 > 25_000) continue;
    prix[logements[0].type_local === 'Maison' ? 'maison' : 'appartement'].push(m2);
  }
  return prix;
}

let t: TestApp;
let dir: string;
let cle: string;

// Three houses and a flat of Abzac sold in 2022 (fictitious lines): the evolution over one year, a figure on one sale.
const VENTES_2022 = [
  { id: '2022-900001', valeur: '200000', surface: '100', type: 'Maison' },
  { id: '2022-900002', valeur: '300000', surface: '100', type: 'Maison' },
  { id: '2022-900003', valeur: '180000', surface: '60', type: 'Maison' },
  { id: '2022-900004', valeur: '120000', surface: '50', type: 'Appartement' },
];
const MAISONS_2022 = VENTES_2022.filter((v) => v.type === 'Maison');

beforeAll(async () => {
  t = await createTestApp({ operations: marcheOperations as Operation[] });
  dir = await mkdtemp(path.join(tmpdir(), 'marche-'));
  cle = (await t.organisation({ acces: 'usage' })).cle;
  if (hasAbzac) await importDvf(t.db, ABZAC);
  const fichier = path.join(dir, 'abzac-2022.csv');
  await writeFile(
    fichier,
    [HEADER, ...VENTES_2022.map((v, i) => etalab({ ...v, date: '2022-06-01', parcelle: `33001000ZZ000${i}` }))].join(
      '\n',
    ) + '\n',
  );
  await importDvf(t.db, fichier);
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

// Answers are kept in memory by input for 24 h, whoever asks: each input below is asked in one state of the data.
const get = async (url: string) => {
  const res = await t.call('GET', url, cle);
  return { status: res.statusCode, body: res.json() };
};

/** Centres of communes as the communes import writes them. */
const centres = (...communes: Array<[insee: string, nom: string, lat: number, lon: number]>) =>
  t.db.query(
    `INSERT INTO communes (dataset, insee, nom, type, departement, codes_postaux, lat, lon)
     SELECT 'live', insee, nom, 'commune-actuelle', '33', '{}', lat, lon
       FROM json_to_recordset($1::json) AS c(insee text, nom text, lat float8, lon float8)`,
    [JSON.stringify(communes.map(([insee, nom, lat, lon]) => ({ insee, nom, lat, lon })))],
  );

describe('prix_commune: estimation from the neighbouring communes', () => {
  it.skipIf(!hasAbzac)(`shrinks a commune with few sales toward its neighbours${SKIP}`, async () => {
    // Abzac and a neighbour 5 km away with 30 flats sold in 2022 at a median of 3 000 €/m².
    await centres(['33001', 'Abzac', 45.014, -0.124], ['33399', 'Voisine', 45.05, -0.1]);
    await t.db.query(
      `INSERT INTO marche_prix (dataset, niveau, code, type, annee, trimestre, ventes, prix_m2_median)
       VALUES ('live', 'commune', '33399', 'appartement', 2022, 0, 30, 3000)`,
    );
    // What a DVF import runs after writing marche_prix: the neighbourhoods are rebuilt, not read per request.
    await reconstruireDerives(t.db, 'live');
    try {
      const { body } = await get('/communes/33001/prix?type=appartement');
      const item = body.bareme.find((b: { millesime: number }) => b.millesime === 2022);
      const poids = 1 / (1 + 10);
      expect(item).toMatchObject({
        label: 'estime',
        n_ventes: 1,
        nb_voisins: 1,
        n_ventes_bassin: 30,
        prix_m2_local: 2400,
        poids_local: Math.round(poids * 1000) / 1000,
        prix_m2: Math.round(poids * 2400 + (1 - poids) * 3000),
      });
      expect(item.qualite.provenance).toBe('estime');
      expect(body.bareme.every((b: { type: string }) => b.type === 'appartement')).toBe(true);
    } finally {
      await t.db.query(`DELETE FROM communes WHERE dataset = 'live' AND insee IN ('33001', '33399')`);
      await t.db.query(`DELETE FROM marche_prix WHERE dataset = 'live' AND code = '33399'`);
      await reconstruireDerives(t.db, 'live');
    }
  });

  it.skipIf(!hasAbzac)(`prices a commune without any sale from its neighbours, once rebuilt${SKIP}`, async () => {
    // Coutras, 3 km from Abzac, has no sale in the data: its houses are priced from Abzac's.
    await centres(['33001', 'Abzac', 45.014, -0.124], ['33138', 'Coutras', 45.04, -0.127]);
    try {
      // The centres alone change nothing: the neighbourhoods are those of the last rebuild.
      expect((await get('/communes/33138/prix')).body).toMatchObject({ commune: 'Coutras', bareme: [] });
      await reconstruireDerives(t.db, 'live');
      const { status, body } = await get('/communes/33138/prix?type=maison');
      expect(status, JSON.stringify(body)).toBe(200);
      const abzac = medianesDuFichier(ABZAC).maison;
      const item = body.bareme.find((b: { millesime: number }) => b.millesime === 2021);
      expect(item).toMatchObject({
        label: 'estime',
        n_ventes: 0,
        prix_m2_local: null,
        nb_voisins: 1,
        n_ventes_bassin: abzac.length,
        poids_local: 0,
        prix_m2: Math.round(mediane(abzac)),
      });
      expect(item.qualite.provenance).toBe('estime');
      expect(body.serie).toEqual([]);
    } finally {
      await t.db.query(`DELETE FROM communes WHERE dataset = 'live' AND insee IN ('33001', '33138')`);
      await reconstruireDerives(t.db, 'live');
    }
  });
});

describe('prix_commune: neighbours placed by their sales', () => {
  it.skipIf(!hasAbzac)(`borrows from Abzac for Coutras when the communes carry no centre${SKIP}`, async () => {
    // The administrative split gives no centre: each commune is placed at the median point of its geolocated sales.
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM communes WHERE dataset = 'live' AND lat IS NOT NULL`,
    );
    expect(rows[0].n).toBe(0);
    // Two houses of Coutras (33138, 3 km north of Abzac) sold in 2021, at 2 000 and 2 400 €/m².
    const fichier = path.join(dir, 'coutras-2021.csv');
    const lignes = [
      { id: '2021-910001', valeur: '200000', surface: '100' },
      { id: '2021-910002', valeur: '240000', surface: '100' },
    ].map((v, i) =>
      etalab({
        ...v,
        type: 'Maison',
        date: '2021-05-01',
        parcelle: `33138000AB000${i}`,
        lat: '45.04',
        lon: '-0.127',
      }).replace(',33001,Abzac,', ',33138,Coutras,'),
    );
    await writeFile(fichier, [HEADER, ...lignes].join('\n') + '\n');
    try {
      await importDvf(t.db, fichier);
      const { status, body } = await get('/communes/33138/prix?type=maison');
      expect(status, JSON.stringify(body)).toBe(200);
      const abzac = medianesDuFichier(ABZAC).maison;
      const item = body.bareme.find((b: { millesime: number }) => b.millesime === 2021);
      const poids = 2 / (2 + 10);
      expect(item).toMatchObject({
        label: 'estime',
        n_ventes: 2,
        prix_m2_local: 2200,
        nb_voisins: 1,
        n_ventes_bassin: abzac.length,
        poids_local: Math.round(poids * 1000) / 1000,
        prix_m2: Math.round(poids * 2200 + (1 - poids) * mediane(abzac)),
      });
    } finally {
      // The sales gone, the aggregates of both communes and of their département rebuilt as an import would.
      await t.db.query(`DELETE FROM dvf_mutations WHERE dataset = 'live' AND insee = '33138'`);
      const client = await t.db.connect();
      try {
        await reconstruireMarche(client, 'live', ['33001', '33138']);
      } finally {
        client.release();
      }
      await reconstruireDerives(t.db, 'live');
    }
  });
});

describe('prix_commune on the real Abzac sample (33001)', () => {
  it.skipIf(!hasAbzac)(`serves 2021 medians per type equal to those computed from the file${SKIP}`, async () => {
    const attendu = medianesDuFichier(ABZAC);
    expect(attendu.maison.length).toBeGreaterThan(10);
    const { status, body } = await get('/communes/33001/prix');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.commune).toBe('Abzac');
    const item = body.bareme.find(
      (b: { type: string; millesime: number }) => b.type === 'maison' && b.millesime === 2021,
    );
    expect(item).toMatchObject({
      n_ventes: attendu.maison.length,
      prix_m2_local: Math.round(mediane(attendu.maison)),
      prix_m2: Math.round(mediane(attendu.maison)),
      label: 'mesure',
      poids_local: 1,
    });
    expect(item.qualite).toMatchObject({ n: attendu.maison.length, provenance: 'mesure', drapeaux: [] });
    // No flat sold alone in the file's 2021 (2021-530714 is ambiguous, 2021-527270 a block): none in the scale.
    expect(attendu.appartement).toEqual([]);
    expect(
      body.bareme.some((b: { type: string; millesime: number }) => b.type === 'appartement' && b.millesime === 2021),
    ).toBe(false);
    const annee = body.serie.find((s: { annee: number }) => s.annee === 2021);
    expect(annee.transactions_maison).toBe(attendu.maison.length);
    expect(annee.prix_m2_maison).toBe(Math.round(mediane(attendu.maison)));
    expect(annee.min_maison).toBe(Math.round(Math.min(...attendu.maison)));
    expect(body.credits.debites).toBe(2);
  });

  it.skipIf(!hasAbzac)(`serves a figure on one sale, with its count and flags, never masked${SKIP}`, async () => {
    const { body } = await get('/communes/33001/prix');
    const item = body.bareme.find(
      (b: { type: string; millesime: number }) => b.type === 'appartement' && b.millesime === 2022,
    );
    // 2022-900004: one flat of 50 m² for 120 000 €; no neighbouring commune has sales here.
    expect(item).toMatchObject({ n_ventes: 1, prix_m2: 2400, label: 'mesure', poids_local: 1, nb_voisins: 0 });
    expect(item.qualite.drapeaux).toContain('peu_d_observations');
    const annee = body.serie.find((s: { annee: number }) => s.annee === 2022);
    expect(annee).toMatchObject({
      transactions_appartement: 1,
      prix_m2_appartement: 2400,
      basse_confiance_appartement: true,
    });
  });

  it.skipIf(!hasAbzac)(`evolution: 2022 against 2021, houses, from the two medians${SKIP}`, async () => {
    const { body } = await get('/communes/33001/prix');
    const m2021 = mediane(medianesDuFichier(ABZAC).maison);
    const m2022 = mediane(MAISONS_2022.map((v) => Number(v.valeur) / Number(v.surface)));
    expect(body.evolution.derniere_annee).toBe(2022);
    expect(body.evolution.maison.un_an).toBe(Math.round((m2022 / m2021 - 1) * 1000) / 10);
    expect(body.evolution.maison.trois_ans).toBeNull();
    expect(body.evolution.confiance).toBe('basse');
    // The département is Abzac alone here: its index is Abzac's medians over its last year's.
    const coef2021 = body.indice_departement.find(
      (i: { type: string; annee: number }) => i.type === 'maison' && i.annee === 2021,
    );
    expect(coef2021.coef).toBeCloseTo(m2021 / m2022, 3);
    const ligne = body.ligne_indexee.find((l: { annee: number }) => l.annee === 2021);
    const dernier = body.bareme.filter((b: { type: string }) => b.type === 'maison').at(-1).prix_m2;
    expect(ligne.prix_m2_maison).toBe(Math.round(dernier * coef2021.coef));
  });
});

describe('prix_commune: codes', () => {
  it('reads Paris, Lyon and Marseille by arrondissement', async () => {
    const { status, body } = await get('/communes/75056/prix');
    expect(status).toBe(400);
    expect(body.code).toBe('parametres_invalides');
    expect(body.detail ?? body.erreurs?.[0]?.message).toMatch(/75101/);
  });

  it('answers 404 commune_introuvable for an unknown code, nothing debited', async () => {
    const { status, body } = await get('/communes/99999/prix');
    expect(status).toBe(404);
    expect(body.code).toBe('commune_introuvable');
  });

  it('serves an empty scale in Alsace-Moselle (no DVF there)', async () => {
    const { status, body } = await get('/communes/67482/prix');
    expect(status).toBe(200);
    expect(body).toMatchObject({ commune: 'Strasbourg', bareme: [], serie: [], evolution: null });
  });
});
