import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { importSup } from '../../../domain/urbanisme/sup-import.ts';
import { createTestDb } from '../../support/db.ts';

const PM3 = path.resolve('../shared/data/sup/110068012_PM3_28_20161104');
const INT1 = path.resolve('../shared/data/sup/213000896_INT1_83044_20160130');
const hasSup = existsSync(PM3) && existsSync(INT1);
const SKIP = hasSup ? '' : ' (skipped: ../shared/data/sup absent)';

const TABLES = ['sup_lots', 'sup_servitudes', 'sup_actes', 'sup_servitudes_actes', 'sup_generateurs', 'sup_assiettes'];

let db: Db;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'sup-'));
});

afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

/** Every stored row, timestamps included: a rewrite of an unchanged row would show. */
async function stockes(): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of TABLES) {
    const { rows } = await db.query<{ r: string }>(`SELECT row_to_json(t)::text AS r FROM ${table} t ORDER BY 1`);
    out[table] = rows.map((r) => r.r);
  }
  return out;
}

describe('CNIG SUP packages', () => {
  it.skipIf(!hasSup)(`imports two real packages whose field cases and identifier types differ${SKIP}`, async () => {
    const report = await importSup(db, [PM3, INT1]);
    // PM3: 1 manager, 3 easements, 3 acts, 3 links, 3 generators, 3 assiettes; INT1: one of each.
    expect(report).toMatchObject({ lus: 22, gardes: 22, rejetes: [] });
    expect(report.details).toContain(
      'paquet 110068012_PM3_28_20161104 (clé 110068012_PM3_28) : catégories PM3 (3 assiettes)',
    );
    const { rows: lots } = await db.query(
      `SELECT lot, gestionnaire_siren, categorie, territoire, to_char(date_lot, 'YYYY-MM-DD') AS date_lot FROM sup_lots ORDER BY lot`,
    );
    expect(lots).toEqual([
      {
        lot: '110068012_PM3_28',
        gestionnaire_siren: '110068012',
        categorie: 'PM3',
        territoire: '28',
        date_lot: '2016-11-04',
      },
      {
        lot: '213000896_INT1_83044',
        gestionnaire_siren: '213000896',
        categorie: 'INT1',
        territoire: '83044',
        date_lot: '2016-01-30',
      },
    ]);
    // IDSUP 35.00 (numeric, upper-case table) meets IdSup 35 (camelCase layer) and IDACTE 35.00: one identifier, `35`.
    const { rows: pm3 } = await db.query(
      `SELECT a.idass, a.idgen, a.idsup, a.categorie, a.typeass, a.forme, s.nomsuplitt, s.gestionnaire,
              to_char(s.datemaj, 'YYYY-MM-DD') AS datemaj, x.typeacte, to_char(x.datedecis, 'YYYY-MM-DD') AS datedecis
         FROM sup_assiettes a
         JOIN sup_servitudes s USING (dataset, lot, idsup)
         JOIN sup_servitudes_actes l USING (dataset, lot, idsup)
         JOIN sup_actes x USING (dataset, lot, idacte)
        WHERE a.lot = '110068012_PM3_28' ORDER BY a.idass`,
    );
    expect(pm3).toHaveLength(3);
    expect(pm3[0]).toEqual({
      idass: '1',
      idgen: '1',
      idsup: '35',
      categorie: 'PM3',
      typeass: 'Enveloppe des zonages réglementaires',
      forme: 'surface',
      nomsuplitt: 'Plan de prévention des risques technologiques',
      gestionnaire: "Direction Régionale de l'Environnement, de l'Aménagement et du Logement Centre",
      datemaj: '2014-04-23',
      typeacte: 'Arrêté préfectoral',
      datedecis: '2014-04-23',
    });
    // Text identifiers, lower-case layer fields, UTF-8 DBFs without .cpg: read without mojibake.
    const { rows: int1 } = await db.query(
      `SELECT a.idsup, a.categorie, a.paramcalc, a.modegeoass, s.descriptio, s.validegest, g.typegen, x.decision
         FROM sup_assiettes a
         JOIN sup_servitudes s USING (dataset, lot, idsup)
         JOIN sup_generateurs g ON g.dataset = a.dataset AND g.lot = a.lot AND g.idgen = a.idgen
         JOIN sup_servitudes_actes l ON l.dataset = a.dataset AND l.lot = a.lot AND l.idsup = a.idsup
         JOIN sup_actes x ON x.dataset = l.dataset AND x.lot = l.lot AND x.idacte = l.idacte
        WHERE a.lot = '213000896_INT1_83044'`,
    );
    expect(int1).toEqual([
      {
        idsup: 'Int1-213000896-1360',
        categorie: 'INT1',
        paramcalc: 100,
        modegeoass: 'Zone tampon',
        descriptio: 'cimetière',
        validegest: true,
        typegen: 'Cimetière',
        decision: 'Création',
      },
    ]);
    // Lambert-93 reprojected: Comps-sur-Artuby (Var) is at about 43.7 N 6.5 E.
    const { rows: boite } = await db.query(
      `SELECT bbox_ymin, bbox_xmin, aire_m2 FROM sup_assiettes WHERE lot = '213000896_INT1_83044'`,
    );
    expect(boite[0].bbox_ymin).toBeGreaterThan(43.6);
    expect(boite[0].bbox_ymin).toBeLessThan(43.8);
    expect(boite[0].bbox_xmin).toBeGreaterThan(6.4);
    expect(boite[0].bbox_xmin).toBeLessThan(6.6);
  });

  it.skipIf(!hasSup)(`changes nothing when the same packages are imported again${SKIP}`, async () => {
    const avant = await stockes();
    const report = await importSup(db, [INT1, PM3]);
    expect(report).toMatchObject({ lus: 22, gardes: 22, rejetes: [] });
    expect(report.details).toContain(
      '  assiettes (3 surfaces, 0 lignes, 0 points) 3 (0 ajoutés, 0 modifiés, 3 inchangés, 0 supprimés)',
    );
    expect(await stockes()).toEqual(avant);
  });

  it.skipIf(!hasSup)(`replaces a package by its newer edition, under one key without the date${SKIP}`, async () => {
    const nouvelle = path.join(dir, 'editions', '213000896_INT1_83044_20200615');
    await cp(INT1, nouvelle, { recursive: true });
    await importSup(db, nouvelle);
    const { rows } = await db.query(
      `SELECT lot, dossier, (SELECT count(*)::int FROM sup_assiettes a WHERE a.lot = l.lot) AS assiettes
         FROM sup_lots l WHERE lot LIKE '213000896%'`,
    );
    expect(rows).toEqual([{ lot: '213000896_INT1_83044', dossier: '213000896_INT1_83044_20200615', assiettes: 1 }]);
  });

  it('reads a lone layer of the Géoportail, lines and points, with its category in a field', async () => {
    const feature = (properties: object, geometry: object) => ({ type: 'Feature', properties, geometry });
    const fichier = path.join(dir, 'assiette_sup_l.geojson');
    await writeFile(
      fichier,
      JSON.stringify({
        type: 'FeatureCollection',
        features: [
          feature(
            { IDASS: 'a1', SUPTYPE: 'i4', NOMASS: 'Ligne 63 kV' },
            {
              type: 'LineString',
              coordinates: [
                [2.35, 48.85],
                [2.36, 48.86],
              ],
            },
          ),
          feature({ idass: 'a2', suptype: 't7', nomass: 'Balise' }, { type: 'Point', coordinates: [2.35, 48.85] }),
          feature({ idass: 'a3', suptype: 't7' }, { type: 'Point', coordinates: ['x', 48.85] }),
        ],
      }),
    );
    const report = await importSup(db, fichier);
    expect(report).toMatchObject({
      lus: 3,
      gardes: 2,
      rejetes: [{ ligne: 3, motif: 'assiette_sup_l.geojson : coordonnée non numérique' }],
    });
    const { rows } = await db.query(
      `SELECT lot, idass, categorie, forme FROM sup_assiettes WHERE lot = 'ASSIETTE_SUP_L' ORDER BY idass`,
    );
    expect(rows).toEqual([
      { lot: 'ASSIETTE_SUP_L', idass: 'a1', categorie: 'I4', forme: 'ligne' },
      { lot: 'ASSIETTE_SUP_L', idass: 'a2', categorie: 'T7', forme: 'point' },
    ]);
  });

  it('refuses a package in MapInfo format, naming the conversion', async () => {
    const paquet = path.join(dir, 'mapinfo', '999999999_AC1_33_20200101');
    await mkdir(paquet, { recursive: true });
    for (const f of ['AC1_ASSIETTE_SUP_S.TAB', 'AC1_ASSIETTE_SUP_S.DAT', 'AC1_ASSIETTE_SUP_S.MAP']) {
      await writeFile(path.join(paquet, f), 'x');
    }
    const erreur = await importSup(db, paquet).catch((e: unknown) => e);
    expect(erreur).toBeInstanceOf(ImportError);
    expect((erreur as Error).message).toContain('ogr2ogr -f "ESRI Shapefile"');
  });
});
