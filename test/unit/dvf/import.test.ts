import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../../db/client.ts';
import { attachBanKeys, dvfSource, importDvf } from '../../../domain/dvf/import.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { createTestDb } from '../../support/db.ts';
import { etalab, HEADER } from './fixtures.ts';

const ABZAC = path.resolve('../shared/data/dvf/dvf_geoloc_2021_33001_abzac_sample.csv');
const DGFIP = path.resolve('../shared/data/dvf/ValeursFoncieres-ZZ000001-0000-echantillon-bouchonne.txt');
const hasAbzac = existsSync(ABZAC);
const hasDgfip = existsSync(DGFIP);
// Said in a test's title only when its file is absent (the test is then skipped).
const SKIP_ABZAC = hasAbzac ? '' : '(skipped: ../shared/data/dvf absent)';
const SKIP_DGFIP = hasDgfip ? '' : '(skipped: ../shared/data/dvf absent)';

let db: Db;
let url: string;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, url, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'dvf-'));
});
afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

// A stored mutation as read: locaux and terrains are JSON text (db/migrations/013_dvf_partitions.sql).
const ROW = '*, locaux::json AS locaux, terrains::json AS terrains';

async function mutation(id: string, dataset = 'live') {
  const { rows } = await db.query(`SELECT ${ROW} FROM dvf_mutations WHERE dataset = $1 AND id_mutation = $2`, [
    dataset,
    id,
  ]);
  return rows[0];
}

async function snapshot(dataset: string) {
  const { rows } = await db.query(`SELECT ${ROW} FROM dvf_mutations WHERE dataset = $1 ORDER BY id_mutation`, [
    dataset,
  ]);
  return rows;
}

describe('Etalab DVF géolocalisées (Abzac, 164 rows)', () => {
  it.skipIf(!hasAbzac)(`imports the 164 rows as 50 mutations, with the recomputed fields ${SKIP_ABZAC}`, async () => {
    const progress: number[] = [];
    const report = await importDvf(db, ABZAC, { onProgress: ({ lus }) => progress.push(lus) });
    expect(report).toMatchObject({
      format: 'etalab',
      lus: 164,
      gardes: 164,
      rejetes: [],
      mutations: { lues: 50, ajoutees: 50, modifiees: 0, inchangees: 0 },
      millesimes: [2021],
      scindees: 0,
    });
    expect(progress.at(-1)).toBe(164);
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM dvf_mutations WHERE dataset = 'live'`);
    expect(rows[0].n).toBe(50);

    // 2021-547818: one house of 129 m² and one dependency on a parcel of three subdivisions (six lines).
    const maison = await mutation('2021-547818');
    expect(maison).toMatchObject({
      nb_lignes: 6,
      logements: 1,
      surface_logements: 129,
      // 259 500 / 129, by hand.
      prix_m2: 2011.63,
      surface_terrain: 829 + 937 + 1965,
      vente_en_bloc: false,
      avec_dependance: true,
      prix_atypique: false,
      motif: null,
      parcelles: ['330010000B1730'],
    });
    expect([...maison.types_locaux].sort()).toEqual(['dependance', 'maison']);
    expect(maison.locaux).toHaveLength(2);
    expect(maison.terrains.map((t: { surface: number }) => t.surface)).toEqual([829, 937, 1965]);

    // 2021-527270: three flats (35, 56, 56 m²: the two lines of 56 m² are two flats, or one line twice), sold together.
    expect(await mutation('2021-527270')).toMatchObject({
      logements: 3,
      surface_logements: 147,
      prix_m2: Math.round((160000 / 147) * 100) / 100,
      vente_en_bloc: true,
      doublon_probable: true,
      // The flats' parcel has no coordinates: the mutation takes those of its other parcel.
      lat: 44.996288,
      lon: -0.126615,
      position_source: 'dvf',
    });

    // 2021-527130: two equal lines of a house of 55 m² without lots: two houses or a duplicated line, DVF cannot say.
    // Counted as DVF writes them (2 700 / 110), flagged; either way, not a market price.
    expect(await mutation('2021-527130')).toMatchObject({
      logements: 2,
      prix_m2: 24.55,
      doublon_probable: true,
      prix_atypique: true,
      adresse_numero: 6,
      adresse_suffixe: 'ter',
      code_voie: 'B012',
    });

    // A land sale: no dwelling, no price per m².
    expect(await mutation('2021-527101')).toMatchObject({
      logements: 0,
      prix_m2: null,
      motif: 'aucun logement : pas de prix au m²',
      nature: 'vente',
    });
    const echanges = await db.query(`SELECT count(*)::int AS n FROM dvf_mutations WHERE nature = 'echange'`);
    expect(echanges.rows[0].n).toBeGreaterThan(0);
    const millesime = await db.query(`SELECT * FROM dvf_millesimes WHERE dataset = 'live'`);
    expect(millesime.rows).toEqual([expect.objectContaining({ millesime: 2021, mutations: 50 })]);
  });

  it.skipIf(!hasAbzac)(`changes nothing when the same file is imported again ${SKIP_ABZAC}`, async () => {
    const before = await snapshot('live');
    const millesimes = await db.query('SELECT * FROM dvf_millesimes ORDER BY 1, 2');
    const report = await importDvf(db, ABZAC);
    expect(report.mutations).toEqual({ lues: 50, ajoutees: 0, modifiees: 0, inchangees: 50 });
    expect(await snapshot('live')).toEqual(before);
    expect((await db.query('SELECT * FROM dvf_millesimes ORDER BY 1, 2')).rows).toEqual(millesimes.rows);
  });

  it.skipIf(!hasAbzac)(`writes the sandbox dataset with --sandbox, apart from the live one ${SKIP_ABZAC}`, async () => {
    const report = await dvfSource.run(db, ABZAC, { sandbox: true, onProgress: () => {} });
    expect(report).toMatchObject({ lus: 164, gardes: 164 });
    expect(report.details.join('\n')).toMatch(/mutations : 50 \(50 ajoutées, 0 modifiées, 0 inchangées\)/);
    expect(await snapshot('sandbox')).toHaveLength(50);
  });
});

describe('raw DGFiP file (2 500 rows, pipes, decimal commas, CRLF)', () => {
  it.skipIf(!hasDgfip)(`imports it, parsing decimal commas and grouping lines by document ${SKIP_DGFIP}`, async () => {
    const report = await importDvf(db, DGFIP, { dataset: 'sandbox' });
    expect(report).toMatchObject({ format: 'dgfip', lus: 2500, gardes: 2500, rejetes: [], millesimes: [2001] });
    expect(report.mutations.lues).toBe(1327);
    expect(report.mutations.ajoutees).toBe(1327);
    const { rows } = await db.query(
      `SELECT count(*)::int AS n, sum(nb_lignes)::int AS lignes, bool_and(valeur_fonciere = 1) AS un_euro,
              bool_and(prix_atypique) AS atypiques, count(*) FILTER (WHERE nature = 'vefa')::int AS vefa
         FROM dvf_mutations WHERE dataset = 'sandbox' AND format = 'dgfip'`,
    );
    // Values are placeholders of 1,00 € in this sample: read as 1, hence symbolic prices.
    expect(rows[0]).toMatchObject({ n: 1327, lignes: 2500, un_euro: true, atypiques: true });
    expect(rows[0].vefa).toBeGreaterThan(0);

    // 5914P01|2015P00254: a dependency (lot 397) and a flat of 85 m² (lot 565, 4 rooms) at 1 rue de Normandie,
    // Mons-en-Barœul; the parcel has six other mutations in the sample.
    const { rows: mons } = await db.query(
      `SELECT ${ROW} FROM dvf_mutations
        WHERE dataset = 'sandbox' AND parcelles = ARRAY['59410000AI0150'] AND locaux::jsonb @> '[{"lots": [{"numero": "565"}]}]'`,
    );
    expect(mons).toHaveLength(1);
    expect(mons[0]).toMatchObject({
      insee: '59410',
      id_mutation: expect.stringMatching(/^2001-D[0-9a-f]{16}$/),
      surface_logements: 85,
      logements: 1,
      avec_dependance: true,
      code_postal: '59370',
      adresse_voie: 'RUE DE NORMANDIE',
      lat: null,
    });
    expect(mons[0].locaux).toContainEqual({
      type: 'appartement',
      surface_bati: 85,
      pieces: 4,
      id_parcelle: '59410000AI0150',
      lots: [{ numero: '565', carrez: null }],
    });
    // Carrez surfaces come with decimal commas (1,00 in this sample).
    const carrez = await db.query(
      `SELECT l->>'carrez' AS carrez FROM dvf_mutations, json_array_elements(locaux::json) AS x(loc),
              json_array_elements(loc->'lots') AS l
        WHERE dataset = 'sandbox' AND l->>'carrez' IS NOT NULL LIMIT 1`,
    );
    expect(carrez.rows[0].carrez).toBe('1');

    const again = await importDvf(db, DGFIP, { dataset: 'sandbox' });
    expect(again.mutations).toEqual({ lues: 1327, ajoutees: 0, modifiees: 0, inchangees: 1327 });
  });

  it.skipIf(!hasDgfip)(`reads a Windows-1252 file with LF line ends the same way ${SKIP_DGFIP}`, async () => {
    const text = readFileSync(DGFIP, 'utf8').split('\r\n').slice(0, 41).join('\n');
    const file = path.join(dir, 'ValeursFoncieres-latin1.txt');
    await writeFile(file, Buffer.from(text, 'latin1'));
    const report = await importDvf(db, file, { dataset: 'sandbox' });
    expect(report).toMatchObject({ lus: 40, gardes: 40, rejetes: [] });
    // Same content, same ids: nothing to write.
    expect(report.mutations.ajoutees + report.mutations.modifiees).toBe(0);
  });
});

describe('rejections, split mutations, formats', () => {
  // The encoding is told from the first bytes that are not ASCII, wherever they come: here past the first chunk read.
  it('reads a Windows-1252 file whose first accent comes after thousands of lines', async () => {
    const file = path.join(dir, 'windows-1252.csv');
    const lignes = Array.from({ length: 1000 }, (_, k) =>
      etalab({ id: `2019-W${k}`, date: '2019-04-01', type: 'Maison', surface: '90', parcelle: '33001000AB0081' }),
    );
    lignes.push(
      etalab({ id: '2019-W1000', date: '2019-04-01', parcelle: '33001000AB0082' }).replace(',Abzac,', ',Abzé,'),
    );
    await writeFile(file, Buffer.from([HEADER, ...lignes].join('\n'), 'latin1'));
    expect((await importDvf(db, file, { dataset: 'sandbox' })).gardes).toBe(1001);
    expect(await mutation('2019-W1000', 'sandbox')).toMatchObject({ commune: 'Abzé' });
  });

  it('rejects bad lines with their reason, and keeps the others', async () => {
    const file = path.join(dir, 'rejets.csv');
    await writeFile(
      file,
      [
        HEADER,
        etalab({ id: '2022-1', type: 'Maison', surface: '100', valeur: '250000', parcelle: '33001000AB0011' }),
        etalab({ id: '2022-2', date: '2022-02-30' }),
        etalab({ id: '2022-3', nature: 'Donation' }),
        etalab({ id: '2022-4', parcelle: '33001AB12' }),
        '2022-5,2022-03-01,000001,Vente',
        etalab({ id: '2022-6', valeur: 'beaucoup' }),
        '',
      ].join('\n'),
    );
    const report = await importDvf(db, file, { dataset: 'sandbox' });
    expect(report).toMatchObject({ lus: 6, gardes: 1, mutations: { lues: 1 } });
    expect(report.rejetes).toEqual([
      { ligne: 3, motif: 'date de mutation invalide : « 2022-02-30 »' },
      { ligne: 4, motif: 'nature de mutation inconnue : « Donation »' },
      { ligne: 5, motif: 'identifiant de parcelle invalide : « 33001AB12 »' },
      { ligne: 6, motif: '4 champs au lieu de 40' },
      { ligne: 7, motif: 'valeur_fonciere illisible : « beaucoup »' },
    ]);
    expect(await mutation('2022-1', 'sandbox')).toMatchObject({ prix_m2: 2500, motif: null });
  });

  // One reader meets 2023-B between the parts of 2023-A and regroups it by a second reading; with two, each reader
  // has its own mutations, and 2023-A's lines may follow each other in its part.
  it.each([1, 2])(
    'regroups a mutation whose lines are not consecutive, and quoted fields (%i readers)',
    async (lecteurs) => {
      const file = path.join(dir, 'scindee.csv');
      await writeFile(
        file,
        [
          HEADER,
          etalab({ id: '2023-A', type: 'Appartement', surface: '40', valeur: '300000', parcelle: '33001000AB0021' }),
          etalab({ id: '2023-B', type: 'Maison', surface: '90', valeur: '180000', parcelle: '33001000AB0022' }),
          etalab({ id: '2023-A', type: 'Appartement', surface: '60', valeur: '300000', parcelle: '33001000AB0023' }),
          etalab({ id: '2023-C', type: 'Maison', surface: '80', valeur: '160000' }).replace(
            'RUE DE TEST',
            '"RUE DU ""TEST"", BIS"',
          ),
        ].join('\r\n'),
      );
      await db.query(`DELETE FROM dvf_mutations WHERE dataset = 'sandbox' AND id_mutation LIKE '2023-%'`);
      const report = await importDvf(db, file, { dataset: 'sandbox', lecteurs });
      expect(report).toMatchObject({ lus: 4, gardes: 4, mutations: { lues: 3, ajoutees: 3 } });
      if (lecteurs === 1) expect(report.scindees).toBe(1);
      expect(await mutation('2023-A', 'sandbox')).toMatchObject({
        nb_lignes: 2,
        logements: 2,
        surface_logements: 100,
        prix_m2: 3000,
        parcelles: ['33001000AB0021', '33001000AB0023'],
      });
      expect((await mutation('2023-C', 'sandbox')).adresse_voie).toBe('RUE DU "TEST", BIS');
    },
  );

  // Readers find lines in the file's bytes: a quoted field holding an end of line makes one record of two lines
  // for all of them, and a quoted id goes to the reader of the same id unquoted.
  it.each([1, 2])(
    'joins a quoted field that spans two lines, and counts lines past it (%i readers)',
    async (lecteurs) => {
      const file = path.join(dir, 'multiligne.csv');
      await writeFile(
        file,
        [
          HEADER,
          etalab({ id: '2024-A', type: 'Maison', surface: '100', valeur: '200000', parcelle: '33001000AB0031' }),
          `"2024-A"${etalab({ id: '2024-A', parcelle: '33001000AB0032' }).slice('2024-A'.length)}`,
          etalab({ id: '2024-B', type: 'Maison', surface: '80', valeur: '160000' }).replace(
            'RUE DE TEST',
            '"RUE\nDU PORT"',
          ),
          etalab({ id: '2024-C', date: '2024-02-30' }),
        ].join('\r\n'),
      );
      const report = await importDvf(db, file, { dataset: 'sandbox', lecteurs });
      expect(report).toMatchObject({ lus: 4, gardes: 3, scindees: 0, mutations: { lues: 2 } });
      expect(report.rejetes).toEqual([{ ligne: 6, motif: 'date de mutation invalide : « 2024-02-30 »' }]);
      expect(await mutation('2024-A', 'sandbox')).toMatchObject({
        nb_lignes: 2,
        parcelles: ['33001000AB0031', '33001000AB0032'],
        prix_m2: 2000,
      });
      expect(await mutation('2024-B', 'sandbox')).toMatchObject({ adresse_voie: 'RUE\nDU PORT', prix_m2: 2000 });
    },
  );

  it('counts a local once per subdivision, and equal locals beside one subdivision as several', async () => {
    const file = path.join(dir, 'produit.csv');
    const p = '33001000AB0031';
    await writeFile(
      file,
      [
        HEADER,
        // One house and one dependency on a parcel of two subdivisions: four lines.
        etalab({ id: '2024-1', type: 'Maison', surface: '120', parcelle: p, culture: 'S', terrain: '500' }),
        etalab({ id: '2024-1', type: 'Maison', surface: '120', parcelle: p, culture: 'J', terrain: '300' }),
        etalab({ id: '2024-1', type: 'Dépendance', parcelle: p, culture: 'S', terrain: '500' }),
        etalab({ id: '2024-1', type: 'Dépendance', parcelle: p, culture: 'J', terrain: '300' }),
        // The same flat (same lot) on two lines: one flat.
        etalab({ id: '2024-2', type: 'Appartement', surface: '50', lot: '12', carrez: '48.5' }),
        etalab({ id: '2024-2', type: 'Appartement', surface: '50', lot: '12', carrez: '48.5' }),
        // Two equal flats without lots: two flats, or one line twice.
        etalab({ id: '2024-3', type: 'Appartement', surface: '50' }),
        etalab({ id: '2024-3', type: 'Appartement', surface: '50' }),
      ].join('\n'),
    );
    await importDvf(db, file, { dataset: 'sandbox' });
    expect(await mutation('2024-1', 'sandbox')).toMatchObject({
      logements: 1,
      surface_logements: 120,
      surface_terrain: 800,
      prix_m2: Math.round((200000 / 120) * 100) / 100,
    });
    expect((await mutation('2024-1', 'sandbox')).locaux).toHaveLength(2);
    expect(await mutation('2024-2', 'sandbox')).toMatchObject({
      logements: 1,
      surface_logements: 50,
      nombre_lots: 1,
      vente_en_bloc: false,
      doublon_probable: false,
    });
    expect((await mutation('2024-2', 'sandbox')).locaux).toEqual([
      {
        type: 'appartement',
        surface_bati: 50,
        pieces: 3,
        id_parcelle: '33001000AB0001',
        lots: [{ numero: '12', carrez: 48.5 }],
      },
    ]);
    expect(await mutation('2024-3', 'sandbox')).toMatchObject({
      logements: 2,
      surface_logements: 100,
      vente_en_bloc: true,
      doublon_probable: true,
      motif: 'locaux identiques sur plusieurs lignes : doublon probable, la surface peut être comptée deux fois',
    });
  });

  it('rewrites only the mutations the file changes, keeping a position found in the BAN', async () => {
    const file = path.join(dir, 'versions.csv');
    const version = (valeur: string) =>
      [
        HEADER,
        etalab({ id: '2025-1', type: 'Maison', surface: '100', valeur, parcelle: '33001000AB0041' }),
        etalab({ id: '2025-2', type: 'Maison', surface: '80', parcelle: '33001000AB0042', lat: '', lon: '' }),
      ].join('\n');
    await writeFile(file, version('200000'));
    expect((await importDvf(db, file, { dataset: 'sandbox' })).mutations).toMatchObject({ ajoutees: 2 });
    // The BAN number of 2025-2's main parcel, imported after the sales: attached with its position.
    await db.query(
      `INSERT INTO adresses (dataset, cle_ban, type, numero, voie, code_voie, code_postal, insee, commune, libelle,
                             lat, lon, parcelles, source)
       VALUES ('sandbox', '33001_z001_00007', 'numero', 7, 'Rue Z', 'Z001', '33230', '33001', 'Abzac', '7 Rue Z',
               45.0, -0.12, '{33001000AB0042}', 'ban')`,
    );
    await writeFile(file, version('210000'));
    const report = await importDvf(db, file, { dataset: 'sandbox' });
    expect(report.mutations).toEqual({ lues: 2, ajoutees: 0, modifiees: 1, inchangees: 1 });
    expect(report.rattacheesBan).toBe(1);
    expect(await mutation('2025-1', 'sandbox')).toMatchObject({ valeur_fonciere: 210000, prix_m2: 2100 });
    expect(await mutation('2025-2', 'sandbox')).toMatchObject({
      cle_ban: '33001_z001_00007',
      lat: 45,
      lon: -0.12,
      position_source: 'ban',
    });
    const again = await importDvf(db, file, { dataset: 'sandbox' });
    expect(again.mutations).toEqual({ lues: 2, ajoutees: 0, modifiees: 0, inchangees: 2 });
    expect(await mutation('2025-2', 'sandbox')).toMatchObject({ position_source: 'ban', lat: 45 });

    // The BAN renumbers the parcel: the removed number's sale follows the new one, with its position.
    await db.query(`DELETE FROM adresses WHERE dataset = 'sandbox' AND cle_ban = '33001_z001_00007'`);
    await db.query(
      `INSERT INTO adresses (dataset, cle_ban, type, numero, voie, code_voie, code_postal, insee, commune, libelle,
                             lat, lon, parcelles, source)
       VALUES ('sandbox', '33001_z001_00009', 'numero', 9, 'Rue Z', 'Z001', '33230', '33001', 'Abzac', '9 Rue Z',
               45.001, -0.121, '{33001000AB0042}', 'ban')`,
    );
    expect(await attachBanKeys(db, 'sandbox', ['33001'])).toBe(1);
    expect(await mutation('2025-2', 'sandbox')).toMatchObject({
      cle_ban: '33001_z001_00009',
      lat: 45.001,
      lon: -0.121,
      position_source: 'ban',
    });
  });

  it('says what it expected of an unknown file, and of a missing one', async () => {
    const file = path.join(dir, 'autre.csv');
    await writeFile(file, 'a,b,c\n1,2,3\n');
    await expect(importDvf(db, file)).rejects.toThrow(ImportError);
    await expect(importDvf(db, file)).rejects.toThrow(/Format DVF non reconnu/);
    await expect(importDvf(db, path.join(dir, 'absent.csv'))).rejects.toThrow(/introuvable/);
  });
});

describe('vintages', () => {
  const partitions = async () =>
    (
      await db.query<{ nom: string; index: number }>(
        `SELECT c.relname AS nom, (SELECT count(*)::int FROM pg_index x WHERE x.indrelid = c.oid) AS index
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'dvf_mutations'::regclass AND c.relname LIKE 'dvf_mutations_live_201%'
          ORDER BY 1`,
      )
    ).rows;

  it('loads each vintage new to the dataset whole into its own indexed partition, then adds to it', async () => {
    const file = path.join(dir, 'millesimes.csv');
    await writeFile(
      file,
      [
        HEADER,
        etalab({ id: '2018-1', date: '2018-05-02', type: 'Maison', surface: '100', parcelle: '33001000AB0051' }),
        etalab({ id: '2019-1', date: '2019-06-03', type: 'Maison', surface: '90', parcelle: '33001000AB0052' }),
        etalab({ id: '2018-2', date: '2018-07-04', type: 'Maison', surface: '80', parcelle: '33001000AB0053' }),
        // A second part of 2019-1, further on: regrouped, written once.
        etalab({ id: '2019-1', date: '2019-06-03', type: 'Maison', surface: '90', parcelle: '33001000AB0054' }),
      ].join('\n'),
    );
    const report = await importDvf(db, file);
    expect(report).toMatchObject({ scindees: 1, millesimes: [2018, 2019] });
    expect(report.mutations).toEqual({ lues: 3, ajoutees: 3, modifiees: 0, inchangees: 0 });
    // The indexes of the table: primary key, commune and date, main parcel, parcels of multi-parcel mutations, BAN
    // key, position cell.
    expect(await partitions()).toEqual([
      { nom: 'dvf_mutations_live_2018', index: 6 },
      { nom: 'dvf_mutations_live_2019', index: 6 },
    ]);
    // Analysed at once: the planner knows a new vintage's communes before autovacuum comes.
    const { rows: analyses } = await db.query(
      `SELECT relname, last_analyze IS NOT NULL AS analysee FROM pg_stat_user_tables
        WHERE relname IN ('dvf_mutations_live_2018', 'dvf_mutations_live_2019') ORDER BY 1`,
    );
    expect(analyses).toEqual([
      { relname: 'dvf_mutations_live_2018', analysee: true },
      { relname: 'dvf_mutations_live_2019', analysee: true },
    ]);
    expect(await mutation('2019-1')).toMatchObject({ nb_lignes: 2, parcelles: ['33001000AB0052', '33001000AB0054'] });

    // A vintage already there takes new mutations in place; a new one gets its partition.
    await writeFile(
      file,
      [
        HEADER,
        etalab({ id: '2018-3', date: '2018-09-05', type: 'Maison', surface: '70', parcelle: '33001000AB0055' }),
        etalab({ id: '2017-2', date: '2017-11-20', type: 'Maison', surface: '50', parcelle: '33001000AB0057' }),
        etalab({ id: '2017-1', date: '2017-01-06', type: 'Maison', surface: '60', parcelle: '33001000AB0056' }),
      ].join('\n'),
    );
    expect((await importDvf(db, file)).mutations).toEqual({ lues: 3, ajoutees: 3, modifiees: 0, inchangees: 0 });
    expect((await partitions()).map((p) => p.nom)).toEqual([
      'dvf_mutations_live_2017',
      'dvf_mutations_live_2018',
      'dvf_mutations_live_2019',
    ]);
    const { rows } = await db.query(
      `SELECT millesime, count(*)::int AS n FROM dvf_mutations WHERE dataset = 'live' AND millesime < 2020
        GROUP BY 1 ORDER BY 1`,
    );
    expect(rows).toEqual([
      { millesime: 2017, n: 2 },
      { millesime: 2018, n: 3 },
      { millesime: 2019, n: 1 },
    ]);
    // The vintages' figures: counted by the readers for the new one (2017), in the table for the one already there.
    const figures = await db.query(
      `SELECT millesime, mutations, premiere_mutation::text, derniere_mutation::text FROM dvf_millesimes
        WHERE dataset = 'live' AND millesime < 2020 ORDER BY 1`,
    );
    expect(figures.rows).toEqual([
      { millesime: 2017, mutations: 2, premiere_mutation: '2017-01-06', derniere_mutation: '2017-11-20' },
      { millesime: 2018, mutations: 3, premiere_mutation: '2018-05-02', derniere_mutation: '2018-09-05' },
      { millesime: 2019, mutations: 1, premiere_mutation: '2019-06-03', derniere_mutation: '2019-06-03' },
    ]);
  });

  // Index builds take extra connections of the pool: never the last one, which a caller may be holding.
  it('indexes a new vintage with a pool of two while its caller holds one of them', async () => {
    const file = path.join(dir, 'petit-pool.csv');
    await writeFile(
      file,
      [
        HEADER,
        etalab({ id: '2014-1', date: '2014-03-02', type: 'Maison', surface: '90', parcelle: '33001000AB0071' }),
      ].join('\n'),
    );
    const small = createDb(url, 2);
    const held = await small.connect();
    try {
      expect((await importDvf(small, file)).mutations).toMatchObject({ ajoutees: 1 });
    } finally {
      held.release();
      await small.end();
    }
    expect((await partitions()).filter((p) => p.nom.endsWith('_2014'))).toEqual([
      { nom: 'dvf_mutations_live_2014', index: 6 },
    ]);
  });

  it('leaves nothing of a new vintage when the import fails', async () => {
    const file = path.join(dir, 'echec.csv');
    await writeFile(
      file,
      [
        HEADER,
        etalab({ id: '2015-1', date: '2015-03-02', type: 'Maison', surface: '100', parcelle: '33001000AB0061' }),
        // Over what numeric(15, 2) holds: the database refuses the batch.
        etalab({ id: '2016-1', date: '2016-03-02', valeur: '1e15', parcelle: '33001000AB0062' }),
      ].join('\n'),
    );
    await expect(importDvf(db, file)).rejects.toThrow(/numeric field overflow/);
    const { rows } = await db.query(
      `SELECT relname FROM pg_class WHERE relname IN ('dvf_mutations_live_2015', 'dvf_mutations_live_2016')`,
    );
    expect(rows).toEqual([]);
    const count = await db.query(`SELECT count(*)::int AS n FROM dvf_mutations WHERE millesime IN (2015, 2016)`);
    expect(count.rows).toEqual([{ n: 0 }]);
  });
});
