import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../db/client.ts';
import { ImportError } from '../../domain/import/source.ts';
import { reprojectionOfPrj } from '../../domain/urbanisme/formats.ts';
import { importZonage } from '../../domain/urbanisme/zonage-import.ts';
import { findZoning, isoDate } from '../../domain/urbanisme/zonage.ts';
import { containsPoint, type ZoneGeometry } from '../../lib/geometrie.ts';
import { createTestDb } from '../support/db.ts';
import { interiorPoint, square } from '../support/geometrie.ts';

const ARPAILLARGUES = path.resolve('../shared/data/gpu/30014_PLU_20171013');
const TROIS_PROVINCES = path.resolve('../shared/data/gpu/241800432_PLUi_20200128');
const hasGpu = existsSync(ARPAILLARGUES) && existsSync(TROIS_PROVINCES);
const SKIP = hasGpu ? '' : ' (skipped: ../shared/data absent)';

const run = promisify(execFile);

let db: Db;
let url: string;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, url, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'zonage-'));
});

afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

async function writeCollection(name: string, features: unknown[], extra: object = {}): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, JSON.stringify({ type: 'FeatureCollection', ...extra, features }));
  return file;
}

async function zoneRows(idurba: string) {
  const { rows } = await db.query<{ id: number; cle: string; libelle: string; libelong: string | null }>(
    'SELECT id, cle, libelle, libelong FROM zones_urbanisme WHERE idurba = $1 ORDER BY id',
    [idurba],
  );
  return rows;
}

describe('GPU upload folders', () => {
  it.skipIf(!hasGpu)(`imports Arpaillargues-et-Aureillac (PLU, Lambert-93, DBF in Windows-1252)${SKIP}`, async () => {
    const report = await importZonage(db, ARPAILLARGUES);
    expect(report).toMatchObject({ format: 'shapefile', lus: 90, gardes: 90, rejetes: [] });
    expect(report.documents).toEqual(['30014_PLU_20171013']);
    expect(report.zones).toEqual({ ajoutees: 90, modifiees: 0, inchangees: 0, supprimees: 0 });
    const rows = await zoneRows('30014_PLU_20171013');
    expect(rows).toHaveLength(90);
    expect(rows.find((r) => r.libelle === 'Ucp')?.libelong).toBe(
      'Zone urbaine soumise à des prescriptions architecturales particulières',
    );
    const doc = await db.query(
      `SELECT typedoc, etat, to_char(datappro, 'YYYY-MM-DD') AS datappro, insee, siren, depuis_doc_urba
         FROM documents_urbanisme WHERE idurba = '30014_PLU_20171013'`,
    );
    expect(doc.rows).toEqual([
      { typedoc: 'PLU', etat: '03', datappro: '2017-10-13', insee: '30014', siren: null, depuis_doc_urba: true },
    ]);
  });

  it.skipIf(!hasGpu)(`imports the PLUi of CC les Trois Provinces (DBF in UTF-8)${SKIP}`, async () => {
    const report = await importZonage(db, TROIS_PROVINCES);
    expect(report).toMatchObject({ lus: 221, gardes: 221, rejetes: [], documents: ['241800432_PLUI_20200128'] });
    const rows = await zoneRows('241800432_PLUI_20200128');
    expect(rows).toHaveLength(221);
    expect(rows.find((r) => r.libelle === 'UE')?.libelong).toBe('UE : zone à vocation économique');
  });

  it.skipIf(!hasGpu)(`changes nothing when the same folders are imported again${SKIP}`, async () => {
    const before = [...(await zoneRows('30014_PLU_20171013')), ...(await zoneRows('241800432_PLUI_20200128'))];
    const again = await importZonage(db, ARPAILLARGUES);
    expect(again.zones).toEqual({ ajoutees: 0, modifiees: 0, inchangees: 90, supprimees: 0 });
    expect((await importZonage(db, TROIS_PROVINCES)).zones).toMatchObject({ ajoutees: 0, modifiees: 0, supprimees: 0 });
    const after = [...(await zoneRows('30014_PLU_20171013')), ...(await zoneRows('241800432_PLUI_20200128'))];
    expect(after).toEqual(before);
  });

  it.skipIf(!hasGpu)(`reads upper-case file names and guesses the encoding without .cpg${SKIP}`, async () => {
    const copy = path.join(dir, 'MAJUSCULES', 'Donnees_geographiques');
    await mkdir(copy, { recursive: true });
    for (const ext of ['shp', 'dbf', 'prj']) {
      await copyFile(
        path.join(ARPAILLARGUES, `30014_ZONE_URBA_20171013.${ext}`),
        path.join(copy, `ZONE_URBA.${ext.toUpperCase()}`),
      );
    }
    await copyFile(path.join(ARPAILLARGUES, '30014_DOC_URBA_20171013.DBF'), path.join(copy, 'DOC_URBA.DBF'));
    const report = await importZonage(db, path.join(dir, 'MAJUSCULES'));
    // Same zones, same accents (Windows-1252 recognised): nothing to change.
    expect(report).toMatchObject({ lus: 90, gardes: 90, documents: ['30014_PLU_20171013'] });
    expect(report.zones).toEqual({ ajoutees: 0, modifiees: 0, inchangees: 90, supprimees: 0 });
  });

  it.skipIf(!hasGpu)(`finds the zone of a point of Arpaillargues, and nothing far away${SKIP}`, async () => {
    const { rows } = await db.query<{ libelle: string; geometrie: ZoneGeometry }>(
      `SELECT libelle, geometrie FROM zones_urbanisme
        WHERE idurba = '30014_PLU_20171013' AND libelle = 'Ucp' ORDER BY aire_m2 DESC LIMIT 1`,
    );
    const point = interiorPoint(rows[0].geometrie);
    const found = await findZoning(db, { ...point, dataset: 'live' });
    expect(found).toMatchObject({
      zone: {
        code: 'Ucp',
        libelle: 'Zone urbaine soumise à des prescriptions architecturales particulières',
        type_document: 'PLU',
        document: '30014_PLU_20171013',
        approuve_le: '2017-10-13',
      },
      reglement_url: null,
      reglement_page: 24,
      famille: 'U',
      idurba: '30014_PLU_20171013',
      insee: '30014',
    });
    // Arpaillargues lies by Uzès (Gard), around 44.0 N 4.4 E.
    expect(point.lat).toBeGreaterThan(43.9);
    expect(point.lat).toBeLessThan(44.1);
    expect(point.lon).toBeGreaterThan(4.3);
    expect(point.lon).toBeLessThan(4.5);
    expect(found!.autres_zones).not.toContain('Ucp');
    expect(found!.autres_zones).toEqual([...found!.autres_zones].sort((a, b) => a.localeCompare(b, 'fr')));
    expect(await findZoning(db, { lat: 48.8566, lon: 2.3522, dataset: 'live' })).toBeNull();
    // The sandbox is another dataset: the live import is not in it.
    expect(await findZoning(db, { ...point, dataset: 'sandbox' })).toBeNull();
  });

  it.skipIf(!hasGpu)(`finds an intercommunal zone, without an INSEE code${SKIP}`, async () => {
    const { rows } = await db.query<{ libelle: string; geometrie: ZoneGeometry }>(
      `SELECT libelle, geometrie FROM zones_urbanisme
        WHERE idurba = '241800432_PLUI_20200128' AND libelle = 'UE' ORDER BY aire_m2 DESC LIMIT 1`,
    );
    const found = await findZoning(db, { ...interiorPoint(rows[0].geometrie), dataset: 'live' });
    expect(found).toMatchObject({
      zone: { code: 'UE', type_document: 'PLUi', document: '241800432_PLUI_20200128', approuve_le: '2020-01-28' },
      insee: null,
    });
  });
});

describe('GeoJSON FeatureCollection', () => {
  it('imports a WGS84 zone with its rules link and page', async () => {
    const file = await writeCollection('latresne.geojson', [
      {
        type: 'Feature',
        properties: {
          libelle: 'UA',
          libelong: 'Zone urbaine du centre ancien',
          typezone: 'U',
          urlfic: 'http://127.0.0.1:1/reglement.pdf#page=7',
          idurba: '33234_PLU_20170123',
          datappro: '20170123',
        },
        geometry: { type: 'Polygon', coordinates: [square(-0.4945, 44.7816, 0.002)] },
      },
      {
        type: 'Feature',
        properties: { LIBELLE: 'N', IDURBA: '33234_PLU_20170123' },
        geometry: { type: 'Polygon', coordinates: [square(-0.4945 + 0.0055, 44.7816, 0.0025)] },
      },
      { type: 'Feature', properties: { idurba: '33234_PLU_20170123' }, geometry: null },
      { type: 'Feature', properties: { libelle: 'A', idurba: '33234_PLU_20170123' }, geometry: null },
    ]);
    const report = await importZonage(db, file);
    expect(report).toMatchObject({
      format: 'geojson',
      lus: 4,
      gardes: 2,
      rejetes: [
        { ligne: 3, motif: 'LIBELLE absent' },
        { ligne: 4, motif: 'sans géométrie' },
      ],
      documents: ['33234_PLU_20170123'],
    });
    const found = await findZoning(db, { lat: 44.7816, lon: -0.4945, dataset: 'live' });
    expect(found).toEqual({
      zone: {
        code: 'UA',
        libelle: 'Zone urbaine du centre ancien',
        type_document: 'PLU',
        document: '33234_PLU_20170123',
        approuve_le: '2017-01-23',
      },
      // The N square starts 0.003° (about 240 m) east of the point: too far to be named.
      autres_zones: [],
      reglement_url: 'http://127.0.0.1:1/reglement.pdf#page=7',
      reglement_page: 7,
      famille: 'U',
      idurba: '33234_PLU_20170123',
      insee: '33234',
    });
    // 0.0019° east, still in UA, N is about 90 m away.
    const nearEdge = await findZoning(db, { lat: 44.7816, lon: -0.4945 + 0.0019, dataset: 'live' });
    expect(nearEdge?.zone.code).toBe('UA');
    expect(nearEdge?.autres_zones).toEqual(['N']);
  });

  it('replaces the zones of a document imported again, keeping the unchanged ones', async () => {
    const ua = {
      type: 'Feature',
      properties: { libelle: 'UA', idurba: '33999_PLU_20200101' },
      geometry: { type: 'Polygon', coordinates: [square(1, 45, 0.001)] },
    };
    const ub = {
      type: 'Feature',
      properties: { libelle: 'UB', idurba: '33999_PLU_20200101' },
      geometry: { type: 'Polygon', coordinates: [square(1.01, 45, 0.001)] },
    };
    await importZonage(db, await writeCollection('v1.geojson', [ua, ub]), { dataset: 'sandbox' });
    const [first] = await zoneRows('33999_PLU_20200101');
    const changed = { ...ua, properties: { ...ua.properties, libelong: 'Centre' } };
    const report = await importZonage(db, await writeCollection('v2.geojson', [changed]), { dataset: 'sandbox' });
    expect(report.zones).toEqual({ ajoutees: 0, modifiees: 1, inchangees: 0, supprimees: 1 });
    expect(await zoneRows('33999_PLU_20200101')).toEqual([{ ...first, libelong: 'Centre' }]);
    expect(await findZoning(db, { lat: 45, lon: 1.01, dataset: 'sandbox' })).toBeNull();
    expect((await findZoning(db, { lat: 45, lon: 1, dataset: 'sandbox' }))?.zone.code).toBe('UA');
  });

  it('streams a collection larger than one read, in many batches', async () => {
    // 400 polygons of 64 vertices (~1 MB) cut across 64 KiB reads, with braces, quotes and escapes in the texts.
    const tricky = 'Zone « N° 1 » {voir} [annexe] "quotée" \\ fin';
    const features = Array.from({ length: 400 }, (_, i) => ({
      type: 'Feature',
      properties: { libelle: `N${i}`, libelong: tricky, idurba: '24000_PLU_20210101' },
      geometry: {
        type: 'Polygon',
        coordinates: [
          Array.from({ length: 65 }, (_, k) => {
            const angle = ((k % 64) / 64) * 2 * Math.PI;
            return [
              0.7 + (i % 20) * 0.01 + 0.004 * Math.cos(angle),
              45 + Math.floor(i / 20) * 0.01 + 0.004 * Math.sin(angle),
            ];
          }),
        ],
      },
    }));
    const progress: number[] = [];
    const report = await importZonage(db, await writeCollection('grande.geojson', features, { name: 'essai' }), {
      dataset: 'sandbox',
      batchSize: 37,
      onProgress: ({ lus }) => progress.push(lus),
    });
    expect(report).toMatchObject({ lus: 400, gardes: 400, rejetes: [] });
    expect(progress.length).toBeGreaterThan(10);
    const { rows } = await db.query(
      `SELECT count(*)::int AS n, count(DISTINCT libelong)::int AS textes, min(libelong) AS libelong
         FROM zones_urbanisme WHERE dataset = 'sandbox' AND idurba = '24000_PLU_20210101'`,
    );
    expect(rows[0]).toEqual({ n: 400, textes: 1, libelong: tricky });
    expect((await findZoning(db, { lat: 45.05, lon: 0.75, dataset: 'sandbox' }))?.zone.code).toBe('N105');
  });

  it('respects holes and multipolygons, and picks the smallest of overlapping zones', async () => {
    const outer = square(2, 46, 0.01);
    const hole = square(2, 46, 0.002);
    await importZonage(
      db,
      await writeCollection('holes.geojson', [
        {
          type: 'Feature',
          properties: { libelle: 'A', idurba: '36000_PLU_20190101' },
          geometry: {
            type: 'MultiPolygon',
            coordinates: [[outer, hole], [square(2.1, 46, 0.001)]],
          },
        },
        {
          type: 'Feature',
          properties: { libelle: 'Ah', idurba: '36000_PLU_20190101' },
          geometry: { type: 'Polygon', coordinates: [square(2.005, 46.005, 0.001)] },
        },
      ]),
    );
    expect(await findZoning(db, { lat: 46, lon: 2, dataset: 'live' })).toBeNull();
    expect((await findZoning(db, { lat: 46, lon: 2.006, dataset: 'live' }))?.zone.code).toBe('A');
    expect((await findZoning(db, { lat: 46, lon: 2.1, dataset: 'live' }))?.zone.code).toBe('A');
    const overlap = await findZoning(db, { lat: 46.005, lon: 2.005, dataset: 'live' });
    expect(overlap).toMatchObject({ zone: { code: 'Ah' }, autres_zones: ['A'] });
    expect(containsPoint({ type: 'Polygon', coordinates: [outer, hole] }, 2.001, 46.001)).toBe(false);
    expect(containsPoint({ type: 'Polygon', coordinates: [outer, hole] }, 2.003, 46.003)).toBe(true);
  });

  it('reprojects a Lambert-93 GeoJSON and refuses what it cannot place', async () => {
    // Latresne (44.7816 N, 0.4945 W) is at 423 652 E, 6 415 278 N in Lambert-93.
    const file = await writeCollection(
      'lambert.geojson',
      [
        {
          type: 'Feature',
          properties: { libelle: 'UB', idurba: '33234_PLU_20990101' },
          geometry: { type: 'Polygon', coordinates: [square(423_652, 6_415_278, 50)] },
        },
      ],
      { crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::2154' } } },
    );
    const report = await importZonage(db, file, { dataset: 'sandbox' });
    expect(report.gardes).toBe(1);
    const { rows } = await db.query(
      `SELECT bbox_xmin, bbox_ymin FROM zones_urbanisme WHERE idurba = '33234_PLU_20990101'`,
    );
    // 50 m west and south of the point: 0.00063° of longitude, 0.00045° of latitude there.
    expect(rows[0].bbox_xmin).toBeCloseTo(-0.4945 - 0.00063, 4);
    expect(rows[0].bbox_ymin).toBeCloseTo(44.7816 - 0.00045, 4);

    const utm = await writeCollection('autre.geojson', [], {
      crs: { type: 'name', properties: { name: 'urn:ogc:def:crs:EPSG::3857' } },
    });
    await expect(importZonage(db, utm)).rejects.toThrow(/non géré/);
    await expect(importZonage(db, path.join(dir, 'absent'))).rejects.toBeInstanceOf(ImportError);
    expect(() =>
      reprojectionOfPrj(
        'PROJCS["RGF93_CC46",GEOGCS["GCS_RGF93",DATUM["D_RGF_1993",SPHEROID["GRS_1980",6378137,298.257222101]],PRIMEM["Greenwich",0],UNIT["Degree",0.017453292519943295]],PROJECTION["Lambert_Conformal_Conic"],PARAMETER["standard_parallel_1",45.25],PARAMETER["standard_parallel_2",46.75],PARAMETER["latitude_of_origin",46],PARAMETER["central_meridian",3],PARAMETER["false_easting",1700000],PARAMETER["false_northing",5200000],UNIT["Meter",1]]',
      ),
    ).toThrow(/Projection non gérée \(RGF93_CC46\)/);
  });

  it('reads dates in the CNIG, ISO and French forms', () => {
    expect(isoDate('20171013')).toBe('2017-10-13');
    expect(isoDate('2017-10-13T00:00:00Z')).toBe('2017-10-13');
    expect(isoDate('13/10/2017')).toBe('2017-10-13');
    expect(isoDate('20171332')).toBeNull();
    expect(isoDate(null)).toBeNull();
  });
});

describe('import CLI', () => {
  const cli = (...args: string[]) =>
    run(process.execPath, ['scripts/import.ts', ...args], {
      env: { ...process.env, DATABASE_URL: url },
      encoding: 'utf8',
    });

  it.skipIf(!hasGpu)(`imports a GPU folder and prints its report${SKIP}`, async () => {
    const { stdout } = await cli('gpu', ARPAILLARGUES, '--sandbox', '--base-url', 'https://exemple.fr/plu/30014');
    // The whole package: 90 zones, and its prescriptions and information (test/unit/urbanisme/paquet-gpu.test.ts).
    expect(stdout).toMatch(/lus\s*: 299/);
    expect(stdout).toMatch(/gardés\s*: 299/);
    expect(stdout).toContain('zones : 90 ajoutées');
    expect(stdout).toMatch(/rejetés\s*: 0/);
    expect(stdout).toContain('30014_PLU_20171013');
    const { rows } = await db.query<{ reglement_url: string }>(
      `SELECT DISTINCT reglement_url FROM zones_urbanisme
        WHERE dataset = 'sandbox' AND idurba = '30014_PLU_20171013' AND libelle = 'Ucp'`,
    );
    expect(rows).toEqual([{ reglement_url: 'https://exemple.fr/plu/30014/30014_reglement_20171013.pdf#page=24' }]);
  });

  it('fails with a French message on a missing folder, and shows its usage on wrong arguments', async () => {
    const missing = await cli('gpu', path.join(dir, 'nulle-part')).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(missing?.code).toBe(1);
    expect(missing?.stderr).toMatch(/Erreur : chemin introuvable/);
    const wrong = await cli('inconnue', dir).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(wrong?.code).toBe(1);
    expect(wrong?.stderr).toMatch(/source inconnue « inconnue »/);
    expect(wrong?.stderr).toContain('Usage : npm run import');
  });
});
