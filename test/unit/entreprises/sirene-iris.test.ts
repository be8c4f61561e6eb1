import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importSirene, sireneSource } from '../../../domain/entreprises/import-sirene.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { importIris, irisSource } from '../../../domain/territoire/import-iris.ts';
import { createTestDb } from '../../support/db.ts';
import { nomsDansLaBase } from './support.ts';

const SIRENE = path.resolve('../shared/data/sirene');
const UNITES = path.join(SIRENE, 'sample_unites_legales_OK.csv');
const ETABLISSEMENTS = path.join(SIRENE, 'sample_etablissements_OK.csv');
const IRIS = path.resolve('../shared/data/iris/strasbourg_ems_iris.geojson');
const hasSirene = existsSync(UNITES) && existsSync(ETABLISSEMENTS);
const hasIris = existsSync(IRIS);
const SKIP_SIRENE = hasSirene ? '' : '(skipped: ../shared/data/sirene absent)';
const SKIP_IRIS = hasIris ? '' : '(skipped: ../shared/data/iris absent)';

let db: Awaited<ReturnType<typeof createTestDb>>;
let dir: string;

beforeAll(async () => {
  db = await createTestDb();
  dir = await mkdtemp(path.join(tmpdir(), 'entreprises-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('SIRENE stock files', () => {
  it.skipIf(!hasSirene)(
    `imports the 3 legal units of the real sample, sole traders without their names ${SKIP_SIRENE}`,
    async () => {
      const report = await importSirene(db.db, UNITES);
      expect(report).toMatchObject({ lus: 3, gardes: 3, rejetes: [] });
      expect(report.details[0]).toBe('unités légales : 3 (3 ajoutés, 0 modifiés, 0 inchangés)');
      const { rows } = await db.db.query(
        `SELECT siren, denomination, sigle, categorie_juridique, personne_physique, societe_civile, ape, etat,
              to_char(cree_le, 'YYYY-MM-DD') AS cree_le, to_char(cesse_le, 'YYYY-MM-DD') AS cesse_le, purgee
         FROM unites_legales ORDER BY siren`,
      );
      expect(rows).toEqual([
        {
          siren: '000325175',
          denomination: null,
          sigle: null,
          categorie_juridique: '1000',
          personne_physique: true,
          societe_civile: false,
          ape: '32.12Z',
          etat: 'A',
          cree_le: '2000-09-26',
          cesse_le: null,
          purgee: false,
        },
        expect.objectContaining({ siren: '001807254', etat: 'C', cree_le: '1972-05-01', cesse_le: '2014-12-31' }),
        expect.objectContaining({ siren: '005410220', etat: 'C', purgee: true, ape: '22.02' }),
      ]);
      // The three sole traders' names and first names, from the file: none of them anywhere in the database.
      const noms = ['JANOYER', 'THIERRY', 'BRETON', 'JACQUES-LUCIEN', 'WATTEBLED', 'GEORGES'];
      expect(await nomsDansLaBase(db.db, noms)).toEqual([]);
    },
  );

  it.skipIf(!hasSirene)(`imports the 3 establishments of the real sample ${SKIP_SIRENE}`, async () => {
    const report = await sireneSource.run(db.db, ETABLISSEMENTS, { sandbox: false, onProgress: () => {} });
    expect(report).toMatchObject({ lus: 3, gardes: 3, rejetes: [] });
    const { rows } = await db.db.query(
      `SELECT siret, siren, nic, siege, etat, to_char(ferme_le, 'YYYY-MM-DD') AS ferme_le, ape, cle_ban
         FROM etablissements ORDER BY siret`,
    );
    expect(rows).toEqual([
      {
        siret: '00588003400011',
        siren: '005880034',
        nic: '00011',
        siege: true,
        etat: 'F',
        ferme_le: '1984-12-25',
        ape: '57.10',
        cle_ban: null,
      },
      expect.objectContaining({ siret: '00600356000015', siege: true, etat: 'F' }),
      expect.objectContaining({ siret: '00600465900014', ape: '21.01' }),
    ]);
  });

  it.skipIf(!hasSirene)(`changes nothing when the same files are imported again ${SKIP_SIRENE}`, async () => {
    const unites = await importSirene(db.db, UNITES);
    expect(unites.details[0]).toBe('unités légales : 3 (0 ajoutés, 0 modifiés, 3 inchangés)');
    const etablissements = await importSirene(db.db, ETABLISSEMENTS);
    expect(etablissements.details[0]).toBe('établissements : 3 (0 ajoutés, 0 modifiés, 3 inchangés)');
  });

  it('keeps civil companies flagged, rejects bad rows with their reason, and refuses a foreign header', async () => {
    const file = path.join(dir, 'StockUniteLegale_extrait.csv');
    const header =
      'siren,statutDiffusionUniteLegale,unitePurgeeUniteLegale,dateCreationUniteLegale,sigleUniteLegale,sexeUniteLegale,prenom1UniteLegale,prenom2UniteLegale,prenom3UniteLegale,prenom4UniteLegale,prenomUsuelUniteLegale,pseudonymeUniteLegale,identifiantAssociationUniteLegale,trancheEffectifsUniteLegale,anneeEffectifsUniteLegale,dateDernierTraitementUniteLegale,nombrePeriodesUniteLegale,categorieEntreprise,anneeCategorieEntreprise,dateDebut,etatAdministratifUniteLegale,nomUniteLegale,nomUsageUniteLegale,denominationUniteLegale,denominationUsuelle1UniteLegale,denominationUsuelle2UniteLegale,denominationUsuelle3UniteLegale,categorieJuridiqueUniteLegale,activitePrincipaleUniteLegale,nomenclatureActivitePrincipaleUniteLegale,nicSiegeUniteLegale,economieSocialeSolidaireUniteLegale,caractereEmployeurUniteLegale';
    await writeFile(
      file,
      [
        header,
        '912345678,O,,2019-04-05,,,,,,,,,,NN,,2023-01-02T10:00:00,1,PME,2021,2019-04-05,A,,,SCI DES TILLEULS,,,,6540,68.20B,NAFRev2,00015,,N',
        '913456789,O,,2015-01-10,,,,,,,,,,NN,,2023-01-02T10:00:00,1,PME,2021,2015-01-10,A,,,GAEC DU MOULIN,,,,6533,01.50Z,NAFRev2,00011,,N',
        '914567890,O,,2012-02-01,,,,,,,,,,NN,,,1,,,2012-02-01,A,,,BOULANGERIE DU CENTRE,,,,5499,10.71C,NAFRev2,00019,,O',
        '12345,O,,2012-02-01,,,,,,,,,,NN,,,1,,,2012-02-01,A,,,TROP COURT,,,,5499,10.71C,NAFRev2,00019,,O',
        '915678901,O,,2012-02-31,,,,,,,,,,NN,,,1,,,2012-02-01,A,,,DATE FAUSSE,,,,5499,10.71C,NAFRev2,00019,,O',
        '916789012,O,,2012-02-01,,,,,,,,,,NN,,,1,,,2012-02-01,A,,,MANQUE,,,,5499',
      ].join('\n'),
    );
    const report = await importSirene(db.db, file);
    expect(report.lus).toBe(6);
    expect(report.gardes).toBe(3);
    expect(report.rejetes).toEqual([
      { ligne: 5, motif: 'siren invalide (12345)' },
      { ligne: 6, motif: 'date invalide (dateCreationUniteLegale = 2012-02-31)' },
      { ligne: 7, motif: '28 colonnes au lieu de 33' },
    ]);
    expect(report.details).toContain('sociétés civiles (catégorie 65xx) : 2');
    const { rows } = await db.db.query(
      `SELECT siren, denomination, societe_civile FROM unites_legales WHERE siren LIKE '91%' ORDER BY siren`,
    );
    expect(rows).toEqual([
      { siren: '912345678', denomination: 'SCI DES TILLEULS', societe_civile: true },
      { siren: '913456789', denomination: 'GAEC DU MOULIN', societe_civile: true },
      { siren: '914567890', denomination: 'BOULANGERIE DU CENTRE', societe_civile: false },
    ]);

    const autre = path.join(dir, 'autre.csv');
    await writeFile(autre, 'a,b,c\n1,2,3\n');
    await expect(importSirene(db.db, autre)).rejects.toThrow(ImportError);
    await expect(importSirene(db.db, path.join(dir, 'absent.csv'))).rejects.toThrow(/fichier introuvable/);
  });
});

describe('IRIS outlines', () => {
  it.skipIf(!hasIris)(`imports the 195 outlines of Strasbourg with 9-character codes ${SKIP_IRIS}`, async () => {
    const report = await importIris(db.db, IRIS);
    expect(report).toMatchObject({ lus: 195, gardes: 195, rejetes: [] });
    expect(report.details[0]).toBe('IRIS : 195 (195 ajoutés, 0 modifiés, 0 inchangés)');
    const { rows } = await db.db.query<{ n: number; neuf: number; communes: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE length(code) = 9 AND code LIKE insee || '%')::int AS neuf,
              count(DISTINCT insee)::int AS communes
         FROM iris`,
    );
    expect(rows[0].n).toBe(195);
    expect(rows[0].neuf).toBe(195);
    // dcomiris 674820901 (an integer in the file) is Vauban Sud, in Strasbourg (67482).
    const vauban = await db.db.query(
      `SELECT code, nom, insee, type, geometrie ->> 'type' AS geometrie,
              bbox_xmin < bbox_xmax AND bbox_ymin < bbox_ymax AS bbox, aire_m2 > 0 AS aire
         FROM iris WHERE code = '674820901'`,
    );
    expect(vauban.rows).toEqual([
      {
        code: '674820901',
        nom: 'Vauban Sud',
        insee: '67482',
        type: 'H',
        geometrie: 'MultiPolygon',
        bbox: true,
        aire: true,
      },
    ]);
    // The box sits around Strasbourg (about 7.75 E, 48.58 N).
    const box = await db.db.query(
      `SELECT code FROM iris
        WHERE box(point(bbox_xmin, bbox_ymin), point(bbox_xmax, bbox_ymax)) && box(point(7.7745, 48.5805), point(7.7745, 48.5805))`,
    );
    expect(box.rows.map((r) => r.code)).toContain('674820901');
  });

  it.skipIf(!hasIris)(`changes nothing when imported again ${SKIP_IRIS}`, async () => {
    const before = await db.db.query(`SELECT code, maj_le FROM iris ORDER BY code`);
    const report = await irisSource.run(db.db, IRIS, { sandbox: false, onProgress: () => {} });
    expect(report.details[0]).toBe('IRIS : 195 (0 ajoutés, 0 modifiés, 195 inchangés)');
    const after = await db.db.query(`SELECT code, maj_le FROM iris ORDER BY code`);
    expect(after.rows).toEqual(before.rows);
  });

  it('pads integer codes, rebuilds a code from commune and IRIS number, and rejects what is not an outline', async () => {
    const file = path.join(dir, 'iris.geojson');
    const carre = (x: number, y: number) => [
      [
        [x, y],
        [x + 0.01, y],
        [x + 0.01, y + 0.01],
        [x, y + 0.01],
        [x, y],
      ],
    ];
    await writeFile(
      file,
      JSON.stringify({
        type: 'FeatureCollection',
        features: [
          // Ain (01): the integer loses the leading zero.
          {
            type: 'Feature',
            properties: { DCOMIRIS: 10040101, DEPCOM: 1004, NAME: 'Centre' },
            geometry: { type: 'Polygon', coordinates: carre(5.3, 45.9) },
          },
          {
            type: 'Feature',
            properties: { depcom: 33234, iris: 0 },
            geometry: { type: 'Polygon', coordinates: carre(-0.5, 44.78) },
          },
          {
            type: 'Feature',
            properties: { CODE_IRIS: '332340000', INSEE_COM: '33001' },
            geometry: { type: 'Polygon', coordinates: carre(-0.5, 44.78) },
          },
          {
            type: 'Feature',
            properties: { code_iris: '751110101' },
            geometry: { type: 'Point', coordinates: [2.37, 48.85] },
          },
          {
            type: 'Feature',
            properties: { code_iris: '751110102' },
            geometry: { type: 'Polygon', coordinates: carre(652000, 6862000) },
          },
        ],
      }),
    );
    const report = await importIris(db.db, file);
    expect(report.lus).toBe(5);
    expect(report.gardes).toBe(2);
    expect(report.rejetes.map((r) => r.ligne)).toEqual([3, 4, 5]);
    expect(report.rejetes[0].motif).toBe('le code IRIS 332340000 n’est pas dans la commune 33001');
    expect(report.rejetes[1].motif).toMatch(/géométrie Point/);
    expect(report.rejetes[2].motif).toMatch(/hors WGS84/);
    const { rows } = await db.db.query(
      `SELECT code, insee, nom FROM iris WHERE insee IN ('01004', '33234') ORDER BY code`,
    );
    expect(rows).toEqual([
      { code: '010040101', insee: '01004', nom: 'Centre' },
      { code: '332340000', insee: '33234', nom: null },
    ]);
  });
});
