import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { importDvf } from '../../../domain/dvf/import.ts';
import { marcheOperations } from '../../../domain/marche/operations.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { etalab, HEADER } from '../dvf/fixtures.ts';

const ABZAC = path.resolve('../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const hasAbzac = existsSync(ABZAC);
const SKIP = hasAbzac ? '' : ' (skipped: ../shared/data/dvf absent)';

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
 * From the file alone, per 2021 `Vente`: its dwellings (a local repeated beside several land subdivisions is one; a
 * local written n times beside one subdivision is n), and whether it is a plain one-dwelling sale at a plausible price.
 */
function ventesDuFichier(file: string) {
  const mutations = new Map<string, Array<Record<string, string>>>();
  for (const r of lireCsv(file)) mutations.set(r.id_mutation, [...(mutations.get(r.id_mutation) ?? []), r]);
  const out: Array<{ date: string; type: string | null; prix_m2: number | null; logements: number }> = [];
  for (const lignes of mutations.values()) {
    if (lignes[0].nature_mutation !== 'Vente') continue;
    const parLocal = new Map<string, Map<string, number>>();
    for (const l of lignes.filter((x) => x.type_local === 'Maison' || x.type_local === 'Appartement')) {
      const local = [l.id_parcelle, l.type_local, l.surface_reelle_bati, l.lot1_numero].join('|');
      const terrain = [l.code_nature_culture, l.surface_terrain].join('|');
      const n = parLocal.get(local) ?? new Map<string, number>();
      n.set(terrain, (n.get(terrain) ?? 0) + 1);
      parLocal.set(local, n);
    }
    const logements = [...parLocal.values()].reduce((s, n) => s + Math.max(...n.values()), 0);
    if (logements === 0) continue;
    const seul = lignes.find((l) => l.type_local === 'Maison' || l.type_local === 'Appartement')!;
    const pro = lignes.some((l) => l.type_local.startsWith('Local'));
    const m2 = Number(lignes[0].valeur_fonciere) / Number(seul.surface_reelle_bati);
    const simple = logements === 1 && !pro && m2 >= 200 && m2 <= 25_000;
    out.push({
      date: lignes[0].date_mutation,
      type: simple ? seul.type_local.toLowerCase() : null,
      prix_m2: simple ? m2 : null,
      logements,
    });
  }
  return out;
}

let t: TestApp;
let dir: string;
let cle: string;

/** Sales of Carignan-de-Bordeaux (33099), the most populated commune of 33360, in 2022 and 2023 (fictitious). */
const CARIGNAN = [
  { id: '2022-800001', date: '2022-02-10', valeur: '300000', surface: '100', type: 'Maison' },
  { id: '2022-800002', date: '2022-05-10', valeur: '250000', surface: '100', type: 'Maison' },
  { id: '2022-800003', date: '2022-12-10', valeur: '360000', surface: '120', type: 'Maison' },
  // A block of two flats: two rows of dwellings for the velocity, no price of one dwelling.
  { id: '2022-800004', date: '2022-07-01', valeur: '400000', surface: '50', type: 'Appartement', parcelle: 9 },
  { id: '2022-800004', date: '2022-07-01', valeur: '400000', surface: '60', type: 'Appartement', parcelle: 9 },
  { id: '2023-800005', date: '2023-03-10', valeur: '280000', surface: '100', type: 'Maison' },
  { id: '2023-800006', date: '2023-12-10', valeur: '200000', surface: '80', type: 'Maison' },
];

/**
 * Sales of Bordeaux (33063) in 2022 (fictitious) whose DVF lines are not one per dwelling: a house written on three
 * lines beside three land subdivisions, a flat sold with its cellar, a block of three flats (three lots), an
 * exchange of a house, and a house sold with a flat.
 */
const BORDEAUX: Array<{
  id: string;
  date: string;
  type: string;
  surface: string;
  parcelle: number;
  nature?: string;
  lot?: string;
  culture?: string;
  terrain?: string;
}> = [
  ...['S', 'J', 'AG'].map((culture, k) => ({
    id: '2022-810001',
    date: '2022-03-01',
    type: 'Maison',
    surface: '90',
    culture,
    terrain: String(100 * (k + 1)),
    parcelle: 1,
  })),
  { id: '2022-810002', date: '2022-04-01', type: 'Appartement', surface: '45', lot: '7', parcelle: 2 },
  { id: '2022-810002', date: '2022-04-01', type: 'Dépendance', surface: '', lot: '107', parcelle: 2 },
  ...['12', '13', '14'].map((lot, k) => ({
    id: '2022-810003',
    date: '2022-06-01',
    type: 'Appartement',
    surface: String(30 + k),
    lot,
    parcelle: 3,
  })),
  { id: '2022-810004', date: '2022-09-01', type: 'Maison', surface: '100', nature: 'Echange', parcelle: 4 },
  // A house and a flat sold together: one row of each type.
  { id: '2022-810005', date: '2022-10-01', type: 'Maison', surface: '80', parcelle: 5 },
  { id: '2022-810005', date: '2022-10-01', type: 'Appartement', surface: '30', lot: '1', parcelle: 5 },
];

beforeAll(async () => {
  t = await createTestApp({ operations: marcheOperations as Operation[] });
  dir = await mkdtemp(path.join(tmpdir(), 'marche-ventes-'));
  cle = (await t.organisation({ acces: 'usage' })).cle;
  if (hasAbzac) await importDvf(t.db, ABZAC);
  const fichier = path.join(dir, 'carignan.csv');
  const lignes = CARIGNAN.map((v, i) =>
    etalab({ ...v, parcelle: `33099000ZZ${String(v.parcelle ?? i).padStart(4, '0')}` }).replace(
      ',33001,Abzac,',
      ',33099,Carignan-de-Bordeaux,',
    ),
  );
  await writeFile(fichier, [HEADER, ...lignes].join('\n') + '\n');
  await importDvf(t.db, fichier);
  const bordeaux = path.join(dir, 'bordeaux.csv');
  const lignesBordeaux = BORDEAUX.map((v) =>
    etalab({ ...v, parcelle: `33063000ZZ${String(v.parcelle).padStart(4, '0')}` }).replace(
      ',33001,Abzac,',
      ',33063,Bordeaux,',
    ),
  );
  await writeFile(bordeaux, [HEADER, ...lignesBordeaux].join('\n') + '\n');
  await importDvf(t.db, bordeaux);
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const get = async (url: string) => {
  const res = await t.call('GET', url, cle);
  return { status: res.statusCode, body: res.json() };
};

describe('ventes_commune on the real Abzac sample (33001)', () => {
  it.skipIf(!hasAbzac)(`serves its 2021 year and quarters as the file counts them${SKIP}`, async () => {
    const ventes = ventesDuFichier(ABZAC);
    const maisons = ventes.filter((v) => v.type === 'maison');
    const { status, body } = await get('/communes/33001/ventes');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.commune).toEqual({ insee: '33001', nom: 'Abzac', code_postal: '33230' });
    expect(body.par_annee).toHaveLength(1);
    expect(body.par_annee[0]).toMatchObject({
      annee: 2021,
      transactions_maisons: maisons.length,
      transactions_appartements: 0,
      transactions_total: maisons.length,
      prix_m2_maison: Math.round(mediane(maisons.map((v) => v.prix_m2!))),
      prix_m2_appartement: null,
      basse_confiance_maison: false,
      basse_confiance_appartement: null,
    });
    // Quarters oldest first, each counting the sales of its three months.
    expect(body.par_trimestre.map((q: { trimestre: string }) => q.trimestre)).toEqual([
      '2021-T1',
      '2021-T2',
      '2021-T3',
      '2021-T4',
    ]);
    for (const q of body.par_trimestre) {
      const n = Number(q.trimestre.slice(-1));
      const dans = maisons.filter((v) => Math.ceil(Number(v.date.slice(5, 7)) / 3) === n);
      expect(q.ventes, q.trimestre).toBe(dans.length);
      expect(q.debut).toBe(`2021-${String((n - 1) * 3 + 1).padStart(2, '0')}-01`);
      expect(q.prix_m2_median).toBe(dans.length ? Math.round(mediane(dans.map((v) => v.prix_m2!))) : null);
    }
    // 2021 ends in December in the data: a whole year, its dwellings' rows counted one per local.
    expect(body.velocite.par_annee).toEqual([{ annee: 2021, ventes: ventes.reduce((s, v) => s + v.logements, 0) }]);
    expect(body.velocite.evolution_volume_pct).toBeNull();
    expect(body.credits.debites).toBe(2);
  });

  it.skipIf(!hasAbzac)(`with type=appartement, the houses' figures are null${SKIP}`, async () => {
    const { body } = await get('/communes/33001/ventes?type=appartement');
    expect(body.par_annee[0]).toMatchObject({
      transactions_maisons: null,
      prix_m2_maison: null,
      prix_m2_global: null,
      transactions_appartements: 0,
      transactions_total: 0,
    });
    expect(body.par_trimestre.every((q: { maisons: null }) => q.maisons === null)).toBe(true);
  });
});

describe('ventes_commune by postal code', () => {
  it('reads the most populated commune of the code, with its velocity over whole years', async () => {
    const { status, body } = await get('/codes-postaux/33360/ventes');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.commune).toEqual({ insee: '33099', nom: 'Carignan-de-Bordeaux', code_postal: '33360' });
    expect(
      body.par_annee.map((a: { annee: number; transactions_maisons: number }) => [a.annee, a.transactions_maisons]),
    ).toEqual([
      [2022, 3],
      [2023, 2],
    ]);
    expect(body.par_annee[0].prix_m2_maison).toBe(3000);
    // 2022: three houses and a block of two flats (5 rows); 2023: two houses.
    expect(body.velocite).toMatchObject({
      code_postal: '33360',
      par_annee: [
        { annee: 2022, ventes: 5 },
        { annee: 2023, ventes: 2 },
      ],
      evolution_volume_pct: -60,
    });
    expect(body.velocite.lecture).toMatch(/baisse de 60 %/);
  });

  it('answers 404 commune_introuvable for a postal code no commune has', async () => {
    const { status, body } = await get('/codes-postaux/00000/ventes');
    expect(status).toBe(404);
    expect(body.code).toBe('commune_introuvable');
  });
});

describe('ventes_commune: velocity', () => {
  it('counts the DVF rows of flats and houses sold, one per lot: not the mutations, not the lines', async () => {
    // From the rows alone: dwellings of sales (not the exchange), a dwelling written beside several subdivisions once.
    const logements = new Set(
      BORDEAUX.filter((v) => (v.nature ?? 'Vente') === 'Vente' && ['Maison', 'Appartement'].includes(v.type)).map((v) =>
        [v.id, v.parcelle, v.type, v.surface, 'lot' in v ? v.lot : ''].join('|'),
      ),
    );
    const mutations = new Set(BORDEAUX.filter((v) => (v.nature ?? 'Vente') === 'Vente').map((v) => v.id));
    const { status, body } = await get('/communes/33063/ventes');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.velocite.par_annee).toEqual([{ annee: 2022, ventes: logements.size }]);
    // Neither the mutations (4) nor the lines of dwellings (10): 7 dwellings.
    expect(logements.size).not.toBe(mutations.size);
    expect(logements.size).toBeLessThan(BORDEAUX.filter((v) => v.type !== 'Dépendance').length - 1);
    // The price counts the plain one-dwelling sales only: the house and the flat with its cellar.
    expect(body.par_annee[0]).toMatchObject({ transactions_maisons: 1, transactions_appartements: 1 });
  });
});

describe('ventes_commune: limits', () => {
  it('says why Strasbourg has no sale (Alsace-Moselle)', async () => {
    const { status, body } = await get('/communes/67482/ventes');
    expect(status).toBe(200);
    expect(body).toMatchObject({ par_trimestre: [], par_annee: [], velocite: null });
    expect(body.limites[0]).toMatch(/Alsace-Moselle/);
  });

  it('says when a commune has no sale', async () => {
    const { body } = await get('/communes/33234/ventes');
    expect(body.par_annee).toEqual([]);
    expect(body.limites[0]).toMatch(/Aucune vente DVF/);
  });
});
