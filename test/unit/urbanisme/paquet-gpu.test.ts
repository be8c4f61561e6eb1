import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { shapefile } from '../../../domain/sandbox/shapefile.ts';
import { importPaquetsGpu } from '../../../domain/urbanisme/paquet-gpu.ts';
import { createTestDb } from '../../support/db.ts';

const ARPAILLARGUES = path.resolve('../shared/data/gpu/30014_PLU_20171013');
const CARTE_COMMUNALE = path.resolve('../shared/data/gpu/50545_CC_20130902');
const hasGpu = existsSync(ARPAILLARGUES) && existsSync(CARTE_COMMUNALE);
const SKIP = hasGpu ? '' : ' (skipped: ../shared/data/gpu absent)';

const run = promisify(execFile);

let db: Db;
let url: string;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, url, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'paquet-gpu-'));
});

afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

/** Every stored row of a document's package, timestamps included: a rewrite of an unchanged row would show. */
async function stockes(idurba: string): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of [
    'documents_urbanisme',
    'documents_urbanisme_communes',
    'zones_urbanisme',
    'secteurs_cc',
    'surcharges_urbanisme',
  ]) {
    const { rows } = await db.query(`SELECT row_to_json(t)::text AS r FROM ${table} t WHERE idurba = $1 ORDER BY 1`, [
      idurba,
    ]);
    out[table] = rows.map((r) => r.r);
  }
  return out;
}

async function surcharges(idurba: string) {
  const { rows } = await db.query<{ nature: string; forme: string; type: string; n: number }>(
    `SELECT nature, forme, type, count(*)::int AS n FROM surcharges_urbanisme WHERE idurba = $1
      GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    [idurba],
  );
  return rows;
}

/** A square of `half` degrees around a point, as a GeoJSON ring. */
function square(lon: number, lat: number, half: number): number[][] {
  return [
    [lon - half, lat - half],
    [lon + half, lat - half],
    [lon + half, lat + half],
    [lon - half, lat + half],
    [lon - half, lat - half],
  ];
}

/** Copies the files of a package's layer (every extension but those excluded) into `to`. */
async function copierCouche(from: string, couche: string, to: string, sauf: string[] = []): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const f of await readdir(from)) {
    if (f.includes(couche) && !sauf.some((ext) => f.toLowerCase().endsWith(ext))) {
      await copyFile(path.join(from, f), path.join(to, f));
    }
  }
}

describe('real packages', () => {
  it.skipIf(!hasGpu)(
    `imports the whole package of Arpaillargues: document, zones, prescriptions, information${SKIP}`,
    async () => {
      const report = await importPaquetsGpu(db, ARPAILLARGUES);
      // 90 zones, 77 + 15 + 93 prescriptions, 18 + 6 information.
      expect(report).toMatchObject({ lus: 299, gardes: 299, rejetes: [] });
      expect(report.details).toContain('paquet 30014_PLU_20171013 : 30014_PLU_20171013 (PLU)');
      expect(report.details).toContain('  zones : 90 ajoutées, 0 modifiées, 0 inchangées, 0 supprimées');
      // INFO_SURF says 30014_PLU_20141013: another date of the same commune's document, attached to the package's.
      expect(report.details).toContain(
        '  18 objet(s) portant l’IDURBA 30014_PLU_20141013, inconnu du paquet, rattaché(s) à son document 30014_PLU_20171013',
      );
      expect(await surcharges('30014_PLU_20171013')).toEqual([
        { nature: 'information', forme: 'point', type: '16', n: 6 },
        { nature: 'information', forme: 'surface', type: '04', n: 7 },
        { nature: 'information', forme: 'surface', type: '13', n: 2 },
        { nature: 'information', forme: 'surface', type: '16', n: 3 },
        { nature: 'information', forme: 'surface', type: '17', n: 1 },
        { nature: 'information', forme: 'surface', type: '19', n: 5 },
        // TYPEPSC is a numeric field in PRESCRIPTION_LIN (15) and text elsewhere (07): both read as two digits.
        { nature: 'prescription', forme: 'ligne', type: '15', n: 15 },
        { nature: 'prescription', forme: 'point', type: '07', n: 93 },
        { nature: 'prescription', forme: 'surface', type: '01', n: 41 },
        { nature: 'prescription', forme: 'surface', type: '05', n: 4 },
        { nature: 'prescription', forme: 'surface', type: '07', n: 14 },
        { nature: 'prescription', forme: 'surface', type: '16', n: 2 },
        { nature: 'prescription', forme: 'surface', type: '18', n: 2 },
        { nature: 'prescription', forme: 'surface', type: '99', n: 14 },
      ]);
      const { rows: stecal } = await db.query(
        `SELECT libelle, txt, sous_type, geometrie ->> 'type' AS type, bbox_ymin, bbox_xmin
         FROM surcharges_urbanisme WHERE idurba = '30014_PLU_20171013' AND txt = 'STECAL' ORDER BY id LIMIT 1`,
      );
      // Windows-1252 (.cpg 1252) read as such; Lambert-93 reprojected: Arpaillargues lies by Uzès, 44.0 N 4.4 E.
      expect(stecal[0]).toMatchObject({
        libelle: "Secteur de taille et de capacité d'accueil limitées",
        sous_type: '03',
        type: 'Polygon',
      });
      expect(stecal[0].bbox_ymin).toBeGreaterThan(43.9);
      expect(stecal[0].bbox_xmin).toBeGreaterThan(4.3);
      const { rows: lignes } = await db.query(
        `SELECT DISTINCT geometrie ->> 'type' AS type FROM surcharges_urbanisme
        WHERE idurba = '30014_PLU_20171013' AND forme = 'ligne'`,
      );
      expect(lignes.map((r) => r.type)).toEqual(['LineString']);
      const { rows: docs } = await db.query(
        `SELECT typedoc, etat, to_char(datappro, 'YYYY-MM-DD') AS datappro, to_char(datefin, 'YYYY-MM-DD') AS datefin,
              nomreg, depuis_doc_urba FROM documents_urbanisme WHERE idurba = '30014_PLU_20171013'`,
      );
      expect(docs).toEqual([
        {
          typedoc: 'PLU',
          etat: '03',
          datappro: '2017-10-13',
          datefin: '2017-10-13',
          nomreg: '30014_reglement_20171013.pdf',
          depuis_doc_urba: true,
        },
      ]);
      // No phantom document for the IDURBA typed wrong.
      expect((await db.query(`SELECT 1 FROM documents_urbanisme WHERE idurba = '30014_PLU_20141013'`)).rows).toEqual(
        [],
      );
      const { rows: communes } = await db.query(
        `SELECT insee, origine FROM documents_urbanisme_communes WHERE idurba = '30014_PLU_20171013'`,
      );
      expect(communes).toEqual([{ insee: '30014', origine: 'doc_urba_com' }]);
    },
  );

  it.skipIf(!hasGpu)(`imports the communal map of 50545: 2013 layout, no INSEE prefix, no .cpg${SKIP}`, async () => {
    const report = await importPaquetsGpu(db, CARTE_COMMUNALE);
    expect(report).toMatchObject({ lus: 3, gardes: 3, rejetes: [] });
    // The 2013 IDURBA has no type: the package's name and its SECTEUR_CC say a communal map.
    const { rows: docs } = await db.query(
      `SELECT idurba, typedoc, to_char(datappro, 'YYYY-MM-DD') AS datappro, insee, depuis_doc_urba
         FROM documents_urbanisme WHERE insee = '50545'`,
    );
    expect(docs).toEqual([
      { idurba: '50545_20130902', typedoc: 'CC', datappro: '2013-09-02', insee: '50545', depuis_doc_urba: false },
    ]);
    const { rows: secteurs } = await db.query(
      `SELECT libelle, typesect, destdomi, insee, to_char(datappro, 'YYYY-MM-DD') AS datappro
         FROM secteurs_cc WHERE idurba = '50545_20130902' ORDER BY libelle`,
    );
    expect(secteurs).toEqual([
      { libelle: 'C', typesect: '01', destdomi: '01', insee: '50545', datappro: '2013-09-02' },
      { libelle: 'Cx', typesect: '02', destdomi: '02', insee: '50545', datappro: '2013-09-02' },
      { libelle: 'NC', typesect: '03', destdomi: '07', insee: '50545', datappro: '2013-09-02' },
    ]);
    const { rows: liens } = await db.query(
      `SELECT insee, origine FROM documents_urbanisme_communes WHERE idurba = '50545_20130902'`,
    );
    expect(liens).toEqual([{ insee: '50545', origine: 'doc_urba_com' }]);
  });

  it.skipIf(!hasGpu)(`changes nothing when the same packages are imported again${SKIP}`, async () => {
    const avant = [await stockes('30014_PLU_20171013'), await stockes('50545_20130902')];
    const report = await importPaquetsGpu(db, [ARPAILLARGUES, CARTE_COMMUNALE]);
    expect(report).toMatchObject({ lus: 302, gardes: 302, rejetes: [] });
    expect(report.details).toContain('  zones : 0 ajoutées, 0 modifiées, 90 inchangées, 0 supprimées');
    expect(report.details).toContain(
      '  prescriptions et informations : 0 ajoutées, 0 modifiées, 209 inchangées, 0 supprimées',
    );
    expect(report.details).toContain(
      '  secteurs de carte communale (3) : 0 ajoutées, 0 modifiées, 3 inchangées, 0 supprimées',
    );
    expect([await stockes('30014_PLU_20171013'), await stockes('50545_20130902')]).toEqual(avant);
  });

  it.skipIf(!hasGpu)(`reads a DBF without .cpg in Windows-1252 by its bytes, never as mojibake${SKIP}`, async () => {
    // PRESCRIPTION_PCT alone, without its .cpg, in a folder of the same name: the same 93 points, unchanged.
    const copie = path.join(dir, 'sans-cpg', '30014_PLU_20171013');
    await copierCouche(ARPAILLARGUES, 'PRESCRIPTION_PCT', copie, ['.cpg']);
    const report = await importPaquetsGpu(db, copie);
    expect(report).toMatchObject({ lus: 93, gardes: 93 });
    expect(report.details).toContain(
      '  prescriptions et informations : 0 ajoutées, 0 modifiées, 93 inchangées, 0 supprimées',
    );
    // The layers the package does not bring are left as they are.
    expect(await surcharges('30014_PLU_20171013')).toHaveLength(14);
  });
});

describe('layers given one by one', () => {
  it.skipIf(!hasGpu)(
    `reads the package's DOC_URBA for a single layer given, and a layer twice published once${SKIP}`,
    async () => {
      const copie = path.join(dir, 'un-fichier', '30014_PLU_20171013');
      await copierCouche(ARPAILLARGUES, 'PRESCRIPTION_PCT', copie, ['.cpg']);
      await copierCouche(ARPAILLARGUES, 'DOC_URBA', copie);
      await writeFile(
        path.join(copie, '30014_PRESCRIPTION_PCT_20171013.geojson'),
        JSON.stringify({
          type: 'FeatureCollection',
          features: [
            {
              type: 'Feature',
              properties: { libelle: 'Doublon' },
              geometry: { type: 'Point', coordinates: [4.4, 44] },
            },
          ],
        }),
      );
      const report = await importPaquetsGpu(db, path.join(copie, '30014_PRESCRIPTION_PCT_20171013.shp'), {
        dataset: 'sandbox',
      });
      expect(report).toMatchObject({ lus: 93, gardes: 93, rejetes: [] });
      const { rows } = await db.query(
        `SELECT etat, depuis_doc_urba FROM documents_urbanisme WHERE dataset = 'sandbox' AND idurba = '30014_PLU_20171013'`,
      );
      expect(rows).toEqual([{ etat: '03', depuis_doc_urba: true }]);
      // The whole folder: the shapefile read, its GeoJSON twin not.
      expect(await importPaquetsGpu(db, copie, { dataset: 'sandbox' })).toMatchObject({ lus: 93, gardes: 93 });
    },
  );
});

describe('packages of other producers', () => {
  it('reads a DBF without .cpg in UTF-8 and one in Windows-1252, and numeric type codes', async () => {
    const libelle = 'Élément de paysage à protéger : « haie » — œuvre';
    const paquet = path.join(dir, '33998_PLU_20210301');
    await mkdir(paquet, { recursive: true });
    // Latresne, in Lambert-93.
    const objets = (n: number, type: string) =>
      Array.from({ length: n }, (_, i) => ({
        parties: [[[423_652 + 40 * i, 6_415_278] as [number, number]]],
        attributs: { LIBELLE: libelle, [type]: 7, [`S${type}`]: '05', IDURBA: '33998_PLU_20210301' },
      }));
    const champs = (type: string) => [
      { nom: 'LIBELLE', type: 'C' as const, longueur: 100 },
      { nom: type, type: 'N' as const, longueur: 11 },
      { nom: `S${type}`, type: 'C' as const, longueur: 2 },
      { nom: 'IDURBA', type: 'C' as const, longueur: 30 },
    ];
    const fichiers = [
      ...shapefile(`${paquet}/33998_PRESCRIPTION_PCT_20210301`, 'point', champs('TYPEPSC'), objets(2, 'TYPEPSC'), {
        encodage: 'utf-8',
        cpg: false,
      }),
      ...shapefile(`${paquet}/33998_INFO_PCT_20210301`, 'point', champs('TYPEINF'), objets(1, 'TYPEINF'), {
        encodage: 'windows-1252',
        cpg: false,
      }),
    ];
    for (const [nom, contenu] of fichiers) await writeFile(nom, contenu);
    const report = await importPaquetsGpu(db, paquet);
    expect(report).toMatchObject({ lus: 3, gardes: 3, rejetes: [] });
    const { rows } = await db.query(
      `SELECT DISTINCT nature, libelle, type, sous_type FROM surcharges_urbanisme WHERE idurba = '33998_PLU_20210301'
        ORDER BY nature`,
    );
    expect(rows).toEqual([
      { nature: 'information', libelle, type: '07', sous_type: '05' },
      { nature: 'prescription', libelle, type: '07', sous_type: '05' },
    ]);
  });

  it('rejects only the features it cannot read, each with its reason; lines and points from GeoJSON', async () => {
    const paquet = path.join(dir, 'divers');
    await mkdir(paquet, { recursive: true });
    const feature = (properties: object, geometry: unknown) => ({ type: 'Feature', properties, geometry });
    // The 2013 layout: no IDURBA, but INSEE and DATAPPRO, whose IDURBA is <INSEE>_<DATAPPRO>.
    const p = { LIBELLE: 'Emplacement réservé', TypePsc: '05', Insee: '33997', DatAppro: '20100101' };
    await writeFile(
      path.join(paquet, 'prescription_surf.geojson'),
      JSON.stringify({
        type: 'FeatureCollection',
        features: [
          feature(p, { type: 'Polygon', coordinates: [square(-0.49, 44.78, 0.001)] }),
          feature(p, null),
          feature({ ...p, LIBELLE: '' }, { type: 'Point', coordinates: [-0.49, 44.78] }),
          feature(p, { type: 'GeometryCollection', geometries: [] }),
          feature(p, { type: 'LineString', coordinates: [[-0.49, 44.78]] }),
        ],
      }),
    );
    await writeFile(
      path.join(paquet, 'PRESCRIPTION_LIN.json'),
      JSON.stringify({
        type: 'FeatureCollection',
        features: [
          feature(
            { ...p, TypePsc: 15 },
            {
              type: 'LineString',
              coordinates: [
                [-0.49, 44.78],
                [-0.48, 44.78],
              ],
            },
          ),
          feature(
            { ...p, TypePsc: 11 },
            {
              type: 'MultiLineString',
              coordinates: [
                [
                  [-0.49, 44.78],
                  [-0.48, 44.79],
                ],
                [
                  [-0.47, 44.78],
                  [-0.46, 44.79],
                ],
              ],
            },
          ),
          feature({ ...p, TypePsc: 11 }, { type: 'Point', coordinates: [-0.49, 44.78] }),
        ],
      }),
    );
    const report = await importPaquetsGpu(db, paquet);
    expect(report).toMatchObject({
      lus: 8,
      gardes: 4,
      rejetes: [
        { ligne: 2, motif: 'prescription_surf.geojson : sans géométrie' },
        { ligne: 3, motif: 'prescription_surf.geojson : LIBELLE absent' },
        { ligne: 4, motif: 'prescription_surf.geojson : géométrie GeometryCollection non gérée' },
        { ligne: 5, motif: 'prescription_surf.geojson : géométrie vide ou dégénérée' },
      ],
    });
    const { rows } = await db.query(
      `SELECT forme, type, geometrie ->> 'type' AS geometrie FROM surcharges_urbanisme WHERE idurba = '33997_20100101'
        ORDER BY id`,
    );
    // A layer's name says what is laid over the zoning, not the shape: a point in a line layer is a point.
    expect(rows).toEqual([
      { forme: 'ligne', type: '15', geometrie: 'LineString' },
      { forme: 'ligne', type: '11', geometrie: 'MultiLineString' },
      { forme: 'point', type: '11', geometrie: 'Point' },
      { forme: 'surface', type: '05', geometrie: 'Polygon' },
    ]);
    const { rows: liens } = await db.query(
      `SELECT insee, origine FROM documents_urbanisme_communes WHERE idurba = '33997_20100101'`,
    );
    expect(liens).toEqual([{ insee: '33997', origine: 'idurba' }]);
  });

  it('replaces the prescriptions of a document imported again, keeping the unchanged ones', async () => {
    const paquet = path.join(dir, 'v', '33996_PLU_20220101');
    await mkdir(paquet, { recursive: true });
    const prescription = (lon: number, libelle: string) => ({
      type: 'Feature',
      properties: { libelle, typepsc: '01' },
      geometry: { type: 'Polygon', coordinates: [square(lon, 45, 0.001)] },
    });
    const ecrire = (features: object[]) =>
      writeFile(
        path.join(paquet, 'PRESCRIPTION_SURF.geojson'),
        JSON.stringify({ type: 'FeatureCollection', features }),
      );
    await ecrire([prescription(1, 'Espace boisé classé'), prescription(1.01, 'Espace boisé classé')]);
    await importPaquetsGpu(db, paquet, { dataset: 'sandbox' });
    const [premier] = (
      await db.query(`SELECT id FROM surcharges_urbanisme WHERE idurba = '33996_PLU_20220101' ORDER BY id`)
    ).rows;
    await ecrire([prescription(1, 'Espace boisé classé à conserver')]);
    const report = await importPaquetsGpu(db, paquet, { dataset: 'sandbox' });
    expect(report.details).toContain(
      '  prescriptions et informations : 0 ajoutées, 1 modifiées, 0 inchangées, 1 supprimées',
    );
    const { rows } = await db.query(
      `SELECT id, libelle FROM surcharges_urbanisme WHERE dataset = 'sandbox' AND idurba = '33996_PLU_20220101'`,
    );
    expect(rows).toEqual([{ id: premier.id, libelle: 'Espace boisé classé à conserver' }]);
    const { rows: doc } = await db.query(
      `SELECT typedoc, to_char(datappro, 'YYYY-MM-DD') AS datappro FROM documents_urbanisme WHERE idurba = '33996_PLU_20220101'`,
    );
    expect(doc).toEqual([{ typedoc: 'PLU', datappro: '2022-01-01' }]);
  });

  it('refuses a package in MapInfo format in one sentence naming the conversion, before writing anything', async () => {
    const paquet = path.join(dir, 'mapinfo', '33995_CC_20190101');
    await mkdir(paquet, { recursive: true });
    for (const ext of ['TAB', 'DAT', 'MAP', 'ID']) await writeFile(path.join(paquet, `SECTEUR_CC.${ext}`), 'x');
    await writeFile(path.join(paquet, 'DOC_URBA.geojson'), JSON.stringify({ type: 'FeatureCollection', features: [] }));
    const erreur = await importPaquetsGpu(db, paquet).catch((e: unknown) => e);
    expect(erreur).toBeInstanceOf(ImportError);
    expect((erreur as Error).message).toMatch(/est au format MapInfo \(SECTEUR_CC\.TAB\)/);
    expect((erreur as Error).message).toContain(
      `ogr2ogr -f "ESRI Shapefile" -lco ENCODING=UTF-8 "${paquet}-shp" "${paquet}"`,
    );
    expect((erreur as Error).message.split('. ').length).toBe(1);
    expect((await db.query(`SELECT 1 FROM documents_urbanisme WHERE idurba LIKE '33995%'`)).rows).toEqual([]);
  });
});

describe('import CLI', () => {
  it.skipIf(!hasGpu)(`imports several packages in one command and prints the report${SKIP}`, async () => {
    const { stdout } = await run(
      process.execPath,
      ['scripts/import.ts', 'gpu', ARPAILLARGUES, CARTE_COMMUNALE, '--sandbox'],
      { env: { ...process.env, DATABASE_URL: url }, encoding: 'utf8' },
    );
    expect(stdout).toMatch(/lus\s*: 302/);
    expect(stdout).toMatch(/rejetés\s*: 0/);
    expect(stdout).toContain('paquet 30014_PLU_20171013 : 30014_PLU_20171013 (PLU)');
    expect(stdout).toContain('paquet 50545_CC_20130902 : 50545_20130902 (CC)');
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM surcharges_urbanisme WHERE dataset = 'sandbox' AND idurba = '30014_PLU_20171013'`,
    );
    expect(rows[0].n).toBe(209);
  });
});
