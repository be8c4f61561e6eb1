import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../../db/client.ts';
import { windows1252 } from '../../../domain/sandbox/part.ts';
import { importPaquetsGpu } from '../../../domain/urbanisme/paquet-gpu.ts';
import { situationUrbanisme, statutAuPoint } from '../../../domain/urbanisme/statut-communes.ts';
import { importStatutCommunes, typeDocumentDe } from '../../../domain/urbanisme/statut-communes-import.ts';
import { createTestDb } from '../../support/db.ts';

let db: Db;
let drop: () => Promise<void>;
let dir: string;

beforeAll(async () => {
  ({ db, drop } = await createTestDb());
  dir = await mkdtemp(path.join(tmpdir(), 'statut-'));
});

afterAll(async () => {
  await drop();
  await rm(dir, { recursive: true, force: true });
});

// A département's extract as a spreadsheet saves it: Windows-1252, `;`, CRLF, names with accents and capitals.
const TABLE = [
  'Code INSEE;Nom de la commune;Document en vigueur;État du document;Date d’approbation;Publié GPU',
  '33001;Abzac;PLU;opposable;27/06/2013;non',
  '33002;Aillas;RNU;;;',
  '33003;Ambarès-et-Lagrave;Carte communale;opposable;2010-03-01;non',
  '33004;Ambès;POS caduc;;;',
  '33005;Andernos-les-Bains;PLUi-H;approuvé;20191212;oui',
  '33006;Arbanats;Schéma directeur;;;',
  '33O07;Arbis;PLU;;;',
  '33008;Arcins;PLU;;31/02/2019;',
  '33234;Latresne;PLU;opposable;23/01/2017;oui',
].join('\r\n');

describe('the table of documents in force', () => {
  it('reads document types as tables write them', () => {
    expect(typeDocumentDe('Plan local d’urbanisme intercommunal')).toBe('PLUi');
    expect(typeDocumentDe('PLUM')).toBe('PLUi');
    expect(typeDocumentDe('plu')).toBe('PLU');
    expect(typeDocumentDe('Règlement national d’urbanisme')).toBe('RNU');
    expect(typeDocumentDe('POS')).toBe('POS');
    expect(typeDocumentDe('Plan de sauvegarde et de mise en valeur')).toBe('PSMV');
    expect(typeDocumentDe('SCoT')).toBeNull();
  });

  it('imports a départemental table, rejecting what it cannot read, and again without change', async () => {
    const fichier = path.join(dir, 'documents-33.csv');
    await writeFile(fichier, windows1252(`${TABLE}\r\n`));
    const report = await importStatutCommunes(db, fichier);
    expect(report).toMatchObject({
      lus: 9,
      gardes: 6,
      rejetes: [
        {
          ligne: 7,
          motif: 'document en vigueur « Schéma directeur » inconnu (attendus : RNU, CC, PLU, PLUi, POS, PSMV)',
        },
        { ligne: 8, motif: 'code INSEE absent ou invalide (33O07)' },
        { ligne: 9, motif: 'date d’approbation illisible (31/02/2019)' },
      ],
    });
    const { rows } = await db.query(
      `SELECT insee, commune, type_document, etat, to_char(approuve_le, 'YYYY-MM-DD') AS approuve_le, publie_gpu
         FROM communes_urbanisme ORDER BY insee`,
    );
    expect(rows).toEqual([
      {
        insee: '33001',
        commune: 'Abzac',
        type_document: 'PLU',
        etat: 'opposable',
        approuve_le: '2013-06-27',
        publie_gpu: false,
      },
      { insee: '33002', commune: 'Aillas', type_document: 'RNU', etat: null, approuve_le: null, publie_gpu: null },
      {
        insee: '33003',
        commune: 'Ambarès-et-Lagrave',
        type_document: 'CC',
        etat: 'opposable',
        approuve_le: '2010-03-01',
        publie_gpu: false,
      },
      { insee: '33004', commune: 'Ambès', type_document: 'RNU', etat: null, approuve_le: null, publie_gpu: null },
      {
        insee: '33005',
        commune: 'Andernos-les-Bains',
        type_document: 'PLUi',
        etat: 'approuvé',
        approuve_le: '2019-12-12',
        publie_gpu: true,
      },
      {
        insee: '33234',
        commune: 'Latresne',
        type_document: 'PLU',
        etat: 'opposable',
        approuve_le: '2017-01-23',
        publie_gpu: true,
      },
    ]);
    const again = await importStatutCommunes(db, fichier);
    expect(again.details[0]).toBe('communes : 6 (0 ajoutés, 0 modifiés, 6 inchangés), 0 retirées');
  });

  it('replaces the communes of the départements a file has, and only those', async () => {
    await db.query(`INSERT INTO communes_urbanisme (dataset, insee, type_document) VALUES ('live', '30014', 'PLU')`);
    const fichier = path.join(dir, 'documents-33-v2.csv');
    // A spreadsheet's column of codes drops their leading zero: 1001 is 01001. What the file no longer says is null.
    await writeFile(fichier, 'insee,typedoc\n33002,RNU\n33001,PLU\n1001,PLU\n');
    const report = await importStatutCommunes(db, fichier);
    expect(report.details[0]).toBe('communes : 3 (1 ajoutés, 2 modifiés, 0 inchangés), 4 retirées');
    const { rows } = await db.query(`SELECT insee FROM communes_urbanisme ORDER BY insee`);
    expect(rows.map((r) => r.insee)).toEqual(['01001', '30014', '33001', '33002']);
  });
});

describe('situationUrbanisme', () => {
  it('tells published documents, RNU, unpublished documents and the unknown apart', async () => {
    // Latresne's PLU published (an imported package), Abzac's table row says PLU not published, Aillas RNU.
    const paquet = path.join(dir, 'gpu', '33234_PLU_20170123');
    await mkdir(paquet, { recursive: true });
    await writeFile(
      path.join(paquet, 'ZONE_URBA.geojson'),
      JSON.stringify({
        type: 'FeatureCollection',
        features: [
          {
            type: 'Feature',
            properties: { LIBELLE: 'UA' },
            geometry: {
              type: 'Polygon',
              coordinates: [
                [
                  [-0.5, 44.78],
                  [-0.49, 44.78],
                  [-0.49, 44.79],
                  [-0.5, 44.79],
                  [-0.5, 44.78],
                ],
              ],
            },
          },
        ],
      }),
    );
    await importPaquetsGpu(db, paquet);
    await writeFile(
      path.join(dir, 'v3.csv'),
      'insee;type_document;publie_gpu\n33234;PLU;oui\n33001;PLU;non\n33002;RNU;\n33003;CC;oui\n',
    );
    await importStatutCommunes(db, path.join(dir, 'v3.csv'));

    const latresne = await situationUrbanisme(db, 'live', '33234');
    expect(latresne).toMatchObject({
      code: 'documents_publies',
      documents: [{ idurba: '33234_PLU_20170123', type_document: 'PLU', approuve_le: '2017-01-23' }],
      en_vigueur: { type_document: 'PLU', publie_gpu: true },
    });
    expect(statutAuPoint(latresne, true).code).toBe('zonage_publie');
    expect(statutAuPoint(latresne, false)).toEqual({
      code: 'hors_zonage',
      motif: 'aucune zone des documents publiés de la commune ne couvre ce point',
    });
    expect(await situationUrbanisme(db, 'live', '33001')).toMatchObject({
      code: 'document_non_publie',
      motif: 'PLU en vigueur, non publié sur le Géoportail de l’Urbanisme',
      documents: [],
    });
    const aillas = await situationUrbanisme(db, 'live', '33002');
    expect(aillas).toMatchObject({ code: 'rnu', motif: 'la commune relève du règlement national d’urbanisme (RNU)' });
    expect(statutAuPoint(aillas, false).code).toBe('rnu');
    expect(await situationUrbanisme(db, 'live', '33003')).toMatchObject({
      code: 'indetermine',
      motif: 'carte communale publié sur le Géoportail de l’Urbanisme, mais non importé ici',
    });
    expect(await situationUrbanisme(db, 'live', '33099')).toMatchObject({ code: 'indetermine', en_vigueur: null });
    // The sandbox is another dataset.
    expect((await situationUrbanisme(db, 'sandbox', '33234')).code).toBe('indetermine');
  });

  it('reads the documents of a municipal arrondissement’s commune, and of a PLUi by its communes', async () => {
    const paris = path.join(dir, 'gpu', '75056_PLU_20241120');
    await mkdir(paris, { recursive: true });
    await writeFile(
      path.join(paris, 'prescription_pct.geojson'),
      JSON.stringify({
        type: 'FeatureCollection',
        features: [
          {
            type: 'Feature',
            properties: { libelle: 'Bâtiment protégé', typepsc: '07' },
            geometry: { type: 'Point', coordinates: [2.38, 48.86] },
          },
        ],
      }),
    );
    await importPaquetsGpu(db, paris);
    expect(await situationUrbanisme(db, 'live', '75111')).toMatchObject({
      code: 'documents_publies',
      documents: [{ idurba: '75056_PLU_20241120' }],
    });
  });
});
