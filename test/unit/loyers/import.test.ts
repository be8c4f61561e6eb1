import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ImportError } from '../../../domain/import/source.ts';
import { editionDe, importLoyers, loyersSource, typeDuNom } from '../../../domain/loyers/import.ts';
import { loyerCommune, loyersCommune, natureLoyer } from '../../../domain/loyers/loyers.ts';
import { createTestDb } from '../../support/db.ts';

const LOYERS = path.resolve('../shared/data/loyers');
const EDITION_2025 = path.join(LOYERS, 'pred-app-mef-dhup_2025_EXCERPT_first25rows.csv');
const EDITION_2018 = path.join(LOYERS, 'indicateurs-loyers-appartements_2018_EXCERPT_dep33.csv');
const hasLoyers = existsSync(EDITION_2025) && existsSync(EDITION_2018);
const SKIP = hasLoyers ? '' : ' (skipped: ../shared/data/loyers absent)';

let db: Awaited<ReturnType<typeof createTestDb>>;
let dir: string;

beforeAll(async () => {
  db = await createTestDb();
  dir = await mkdtemp(path.join(tmpdir(), 'loyers-'));
});
afterAll(async () => {
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  await db.db.query('DELETE FROM loyers_communes');
});

/** A file of the test in `dir` (a sub-folder when the name has one), written in `charset`. */
async function fichier(nom: string, texte: string, charset: 'latin1' | 'utf8' = 'latin1'): Promise<string> {
  const chemin = path.join(dir, nom);
  await mkdir(path.dirname(chemin), { recursive: true });
  await writeFile(chemin, Buffer.from(texte, charset));
  return chemin;
}

/** The rows of a rent indicators file as this test reads them, apart from the importer: by column name. */
async function lignesDuFichier(
  chemin: string,
  charset: 'windows-1252' | 'utf-8',
): Promise<Array<Record<string, string>>> {
  const texte = new TextDecoder(charset).decode(await readFile(chemin));
  const [entete, ...lignes] = texte.split(/\r?\n/).filter((l) => l !== '');
  const champs = (l: string) => l.split(';').map((c) => c.replace(/^"(.*)"$/, '$1'));
  const noms = champs(entete);
  return lignes.map((l) => Object.fromEntries(champs(l).map((v, i) => [noms[i], v])));
}

const nombre = (v: string) => Number(v.replace(',', '.'));

async function lignes(where = 'true'): Promise<Array<Record<string, unknown>>> {
  const { rows } = await db.db.query(`SELECT * FROM loyers_communes WHERE ${where} ORDER BY edition, insee`);
  return rows;
}

const ENTETE_2025 =
  '"id_zone";"INSEE_C";"LIBGEO";"EPCI";"DEP";"REG";"loypredm2";"lwr.IPm2";"upr.IPm2";"TYPPRED";"nbobs_com";"nbobs_mail";"R2_adj"';
const ENTETE_2018 =
  'id_zone;INSEE;LIBGEO;DEP;REG;EPCI;TYPPRED;loypredm2;lwr.IPm2;upr.IPm2;R2adj;NBobs_maille;NBobs_commune';

describe('the real 2025 edition (quoted, Windows-1252, decimal commas)', () => {
  it.skipIf(!hasLoyers)(`imports every row of the excerpt as the file gives it${SKIP}`, async () => {
    const report = await importLoyers(db.db, EDITION_2025);
    expect(report).toMatchObject({ lus: 25, gardes: 25, rejetes: [] });
    expect(report.details).toEqual([
      'pred-app-mef-dhup_2025_EXCERPT_first25rows.csv : appartements, édition 2025 (lue dans le nom du fichier), disposition depuis 2022',
      '  communes : 25 (25 ajoutés, 0 modifiés, 0 inchangés), 0 retirées',
      'annonces réanalysées : 0 (sur 0 annonces actives des communes concernées)',
    ]);
    // Read by this test apart from the importer: every row stored is the file's.
    const attendues = await lignesDuFichier(EDITION_2025, 'windows-1252');
    expect(attendues).toHaveLength(25);
    const stockees = new Map((await lignes()).map((r) => [r.insee, r]));
    for (const f of attendues) {
      expect(stockees.get(f.INSEE_C), f.INSEE_C).toEqual({
        dataset: 'live',
        insee: f.INSEE_C,
        type_logement: 'appartement',
        edition: 2025,
        commune: f.LIBGEO,
        epci: f.EPCI,
        id_zone: f.id_zone,
        loyer_m2: nombre(f.loypredm2),
        loyer_m2_bas: nombre(f['lwr.IPm2']),
        loyer_m2_haut: nombre(f['upr.IPm2']),
        niveau_prediction: f.TYPPRED,
        nb_obs_commune: Number(f.nbobs_com),
        nb_obs_maille: Number(f.nbobs_mail),
        r2_ajuste: nombre(f.R2_adj),
      });
    }
  });

  it.skipIf(!hasLoyers)(`reads accents in Windows-1252 and the figures of Civray and Condac${SKIP}`, async () => {
    await importLoyers(db.db, EDITION_2025);
    expect((await lignes(`insee = '86051'`))[0].commune).toBe('Champagné-le-Sec');
    expect((await lignes(`insee = '16098'`))[0].commune).toBe('La Chèvrerie');
    // Civray: predicted on its own 273 listings.
    expect(await loyerCommune(db.db, 'live', '86078', 'appartement')).toEqual({
      insee: '86078',
      commune: 'Civray',
      type_logement: 'appartement',
      edition: 2025,
      loyer_m2: 7.98847434284606,
      bas_m2: 6.21894742514612,
      haut_m2: 10.2614989263734,
      nature: 'observe_commune',
      niveau_prediction: 'commune',
      nb_obs_commune: 273,
      nb_obs_maille: 1044,
      r2_ajuste: 0.719908446134695,
    });
    // Condac has 11 listings of its own, too few: the group's prediction.
    expect(await loyerCommune(db.db, 'live', '16104', 'appartement')).toMatchObject({
      loyer_m2: 8.48108601820233,
      nature: 'predit_maille',
      niveau_prediction: 'maille',
      nb_obs_commune: 11,
    });
    expect(await loyerCommune(db.db, 'live', '16104', 'maison')).toBeNull();
    expect(await loyerCommune(db.db, 'sandbox', '86078', 'appartement')).toBeNull();
  });

  it.skipIf(!hasLoyers)(
    `takes the year from the folder when the file has the publisher's name, and refuses a name without it${SKIP}`,
    async () => {
      await mkdir(path.join(dir, 'carte-des-loyers-2025'), { recursive: true });
      const publie = path.join(dir, 'carte-des-loyers-2025', 'pred-app-mef-dhup.csv');
      await copyFile(EDITION_2025, publie);
      const report = await loyersSource.run(db.db, publie, { sandbox: true, onProgress: () => {} });
      expect(report.gardes).toBe(25);
      expect(report.details[0]).toContain('édition 2025 (lue dans le nom du dossier)');
      expect(await lignes(`dataset = 'sandbox'`)).toHaveLength(25);
      expect(await lignes(`dataset = 'live'`)).toHaveLength(0);

      await mkdir(path.join(dir, 'telechargements'), { recursive: true });
      const sansAnnee = path.join(dir, 'telechargements', 'pred-app-mef-dhup.csv');
      await copyFile(EDITION_2025, sansAnnee);
      await expect(importLoyers(db.db, sansAnnee)).rejects.toThrow(/année d’édition introuvable/);
    },
  );
});

describe('the real 2018 edition (INSEE as integers, epci level)', () => {
  it.skipIf(!hasLoyers)(`imports the Gironde rows, Latresne observed, Abzac and Balizac borrowed${SKIP}`, async () => {
    const report = await importLoyers(db.db, EDITION_2018);
    expect(report).toMatchObject({ lus: 538, gardes: 538, rejetes: [] });
    expect(report.details[0]).toContain('édition 2018');
    expect(report.details[0]).toContain('disposition 2018');
    const attendues = await lignesDuFichier(EDITION_2018, 'utf-8');
    const stockees = new Map((await lignes()).map((r) => [r.insee, r]));
    expect(stockees.size).toBe(attendues.length);
    for (const f of attendues) {
      expect(stockees.get(f.INSEE.padStart(5, '0')), f.INSEE).toMatchObject({
        commune: f.LIBGEO,
        loyer_m2: nombre(f.loypredm2),
        loyer_m2_bas: nombre(f['lwr.IPm2']),
        loyer_m2_haut: nombre(f['upr.IPm2']),
        niveau_prediction: f.TYPPRED,
        nb_obs_commune: Number(f.NBobs_commune),
        nb_obs_maille: Number(f.NBobs_maille),
        r2_ajuste: nombre(f.R2adj),
      });
    }
    expect(await loyerCommune(db.db, 'live', '33234', 'appartement')).toMatchObject({
      commune: 'Latresne',
      edition: 2018,
      loyer_m2: 12.08732544,
      bas_m2: 10.27720111,
      haut_m2: 14.21626712,
      nature: 'observe_commune',
      nb_obs_commune: 205,
    });
    // Abzac has 31 listings, yet the source predicted it from its group: the source's level decides.
    expect(await loyerCommune(db.db, 'live', '33001', 'appartement')).toMatchObject({
      loyer_m2: 8.864363164,
      nature: 'predit_maille',
      niveau_prediction: 'maille',
      nb_obs_commune: 31,
    });
    expect(await loyerCommune(db.db, 'live', '33026', 'appartement')).toMatchObject({
      commune: 'Balizac',
      nature: 'predit_maille',
      niveau_prediction: 'epci',
    });
    expect((await lignes(`insee = '33003'`))[0].commune).toBe('Ambarès-et-Lagrave');
  });

  it.skipIf(!hasLoyers)(`knows the 2018 edition by its layout under the published name${SKIP}`, async () => {
    await mkdir(path.join(dir, 'donnees'), { recursive: true });
    const publie = path.join(dir, 'donnees', 'indicateurs-loyers-appartements.csv');
    await copyFile(EDITION_2018, publie);
    const report = await importLoyers(db.db, publie);
    expect(report.details[0]).toBe(
      'indicateurs-loyers-appartements.csv : appartements, édition 2018 (lue dans la disposition de 2018), disposition 2018',
    );
  });

  it.skipIf(!hasLoyers)(
    `serves the latest edition of a commune and type, and every type of a commune${SKIP}`,
    async () => {
      const latresne2025 = await fichier(
        'recent/pred-app-mef-dhup-2025.csv',
        `${ENTETE_2025}\r\n"2042";"33234";"Latresne";"243301439";"33";"75";13,1;11,2;15,3;"commune";180;610;0,81\r\n`,
      );
      const maisons = await fichier(
        'recent/pred-mai-mef-dhup-2025.csv',
        `${ENTETE_2025}\r\n"2042";"33234";"Latresne";"243301439";"33";"75";11,5;9,1;14;"maille";12;610;0,7\r\n`,
      );
      await importLoyers(db.db, [EDITION_2018, latresne2025, maisons]);
      expect(await loyerCommune(db.db, 'live', '33234', 'appartement')).toMatchObject({
        edition: 2025,
        loyer_m2: 13.1,
      });
      // Abzac is not in the 2025 file: its 2018 figure, dated.
      expect(await loyerCommune(db.db, 'live', '33001', 'appartement')).toMatchObject({ edition: 2018 });
      const tous = await loyersCommune(db.db, 'live', '33234');
      expect(Object.keys(tous).sort()).toEqual(['appartement', 'maison']);
      expect(tous.appartement).toMatchObject({ edition: 2025, nature: 'observe_commune' });
      expect(tous.maison).toMatchObject({ edition: 2025, loyer_m2: 11.5, nature: 'predit_maille' });
    },
  );
});

describe('files as the real world writes them', () => {
  it('pads INSEE codes written as integers in a 2018 file in Latin-1, keeps Corsica, reads a house file', async () => {
    const chemin = await fichier(
      'indicateurs-loyers-maisons.csv',
      [
        ENTETE_2018,
        "1;1001;L'Abergement-Clémenciat;1;84;200069193;maille;9,1;7,2;11,5;0,61;412;3",
        '2;2A004;Ajaccio;2A;94;242010056;commune;14,2;12,1;16,6;0,77;900;640',
        '3;97411;Saint-Denis;974;4;249740119;epci;12,3;10;15;0,7;800;0',
        '',
      ].join('\r\n'),
    );
    const report = await importLoyers(db.db, chemin);
    expect(report).toMatchObject({ lus: 3, gardes: 3, rejetes: [] });
    expect(report.details[0]).toContain('maisons, édition 2018 (lue dans la disposition de 2018)');
    const rows = await lignes();
    expect(rows.map((r) => [r.insee, r.type_logement, r.commune])).toEqual([
      ['01001', 'maison', "L'Abergement-Clémenciat"],
      ['2A004', 'maison', 'Ajaccio'],
      ['97411', 'maison', 'Saint-Denis'],
    ]);
  });

  it('reads a re-export: UTF-8 with a byte order mark, columns reordered in lower case, commas and dots, LF', async () => {
    const chemin = await fichier(
      'export/loyers_t1-t2_2024.csv',
      '\uFEFFinsee_c,libgeo,typpred,loypredm2,lwr.ipm2,upr.ipm2,nbobs_com,nbobs_mail,r2_adj\n' +
        '33234,Latresne,commune,14.25,12.5,16.75,96,640,0.8\n' +
        '59350,Lille,commune,18.5,16,21,3000,3200,0.75\n',
      'utf8',
    );
    const report = await importLoyers(db.db, chemin);
    expect(report).toMatchObject({ lus: 2, gardes: 2, rejetes: [] });
    expect(report.details[0]).toContain('appartements T1-T2, édition 2024');
    expect(await loyerCommune(db.db, 'live', '33234', 'appartement_t1_t2')).toMatchObject({
      loyer_m2: 14.25,
      bas_m2: 12.5,
      haut_m2: 16.75,
      nature: 'observe_commune',
    });
  });

  it('refuses a header of an unknown edition, saying which columns it lacks, and writes nothing', async () => {
    const bon = await fichier(
      'pred-app3-mef-dhup-2025.csv',
      `${ENTETE_2025}\r\n"7";"59350";"Lille";"200093201";"59";"32";14,1;12;16,4;"commune";2400;4800;0,74\r\n`,
    );
    const inconnu = await fichier(
      'pred-mai-mef-dhup-2026.csv',
      '"INSEE_C";"LIBGEO";"loyer_predit_m2";"borne_basse";"borne_haute";"niveau"\r\n"59350";"Lille";13;11;15;"commune"\r\n',
    );
    const erreur = await importLoyers(db.db, [bon, inconnu]).catch((e: unknown) => e);
    expect(erreur).toBeInstanceOf(ImportError);
    expect((erreur as Error).message).toContain('en-tête non reconnu comme celui des indicateurs de loyers');
    expect((erreur as Error).message).toContain('loypredm2, lwr.IPm2, upr.IPm2, TYPPRED');
    expect(await lignes()).toEqual([]);
  });

  it('refuses a file whose name says no type of dwelling, or two', async () => {
    const corps = `${ENTETE_2025}\r\n"7";"59350";"Lille";"200093201";"59";"32";14,1;12;16,4;"commune";2400;4800;0,74\r\n`;
    const sansType = await fichier('pred-loc-mef-dhup-2025.csv', corps);
    await expect(importLoyers(db.db, sansType)).rejects.toThrow(
      /type de logement introuvable dans le nom « pred-loc-mef-dhup-2025\.csv »/,
    );
    const deuxTypes = await fichier('loyers-appartements-maisons-2025.csv', corps);
    await expect(importLoyers(db.db, deuxTypes)).rejects.toThrow(/dit plusieurs types de logement/);
    expect(await lignes()).toEqual([]);
  });

  it('rejects unreadable rows with their reason and keeps the others', async () => {
    const chemin = await fichier(
      'pred-app-mef-dhup-2023.csv',
      [
        ENTETE_2025,
        '"7";"59350";"Lille";"200093201";"59";"32";14,1;12;16,4;"commune";2400;4800;0,74',
        '"7";"5935X";"Nulle part";"200093201";"59";"32";14,1;12;16,4;"commune";2400;4800;0,74',
        '"7";"59009";"Villeneuve-d\'Ascq";"200093201";"59";"32";NA;NA;NA;"commune";900;4800;0,74',
        '"7";"59512";"Roubaix";"200093201";"59";"32";11;12,5;13;"commune";900;4800;0,74',
        '"7";"59599";"Tourcoing";"200093201";"59";"32";11;10;13;"commune";-3;4800;0,74',
        '"7";"59350";"Lille";"200093201";"59";"32";15;13;17;"commune";2400;4800;0,74',
        '"7";"59360";"Loos";"200093201";"59";"32";12;10;14',
        '',
      ].join('\r\n'),
    );
    const report = await importLoyers(db.db, chemin);
    expect(report).toMatchObject({ lus: 7, gardes: 1 });
    expect(report.rejetes).toEqual([
      { ligne: 3, motif: 'code INSEE absent ou invalide (5935X)' },
      { ligne: 4, motif: 'loypredm2 illisible (NA)' },
      { ligne: 5, motif: 'intervalle incohérent : 11 hors de [12.5, 13]' },
      { ligne: 6, motif: 'nbobs_com (NBobs_commune) illisible (-3)' },
      { ligne: 7, motif: 'commune 59350 déjà lue ligne 2' },
      { ligne: 8, motif: '9 colonnes au lieu de 13' },
    ]);
    expect((await lignes()).map((r) => r.insee)).toEqual(['59350']);
  });

  it('replaces an edition imported again: rows changed, communes gone deleted, other editions kept', async () => {
    const ligne = (insee: string, loyer: string) =>
      `"7";"${insee}";"C";"200093201";"59";"32";${loyer};5;30;"commune";500;4800;0,74`;
    const v1 = await fichier(
      'v1/pred-app-mef-dhup-2024.csv',
      [ENTETE_2025, ligne('59350', '14'), ligne('59512', '11'), ligne('59599', '10,5'), ''].join('\r\n'),
    );
    const autreEdition = await fichier(
      'v1/pred-app-mef-dhup-2023.csv',
      [ENTETE_2025, ligne('59512', '10'), ''].join('\r\n'),
    );
    await importLoyers(db.db, [v1, autreEdition]);
    expect((await importLoyers(db.db, v1)).details[1]).toBe(
      '  communes : 3 (0 ajoutés, 0 modifiés, 3 inchangés), 0 retirées',
    );
    const v2 = await fichier(
      'v2/pred-app-mef-dhup-2024.csv',
      [ENTETE_2025, ligne('59350', '14,5'), ligne('59512', '11'), ''].join('\r\n'),
    );
    expect((await importLoyers(db.db, v2)).details[1]).toBe(
      '  communes : 2 (0 ajoutés, 1 modifiés, 1 inchangés), 1 retirées',
    );
    expect((await lignes()).map((r) => [r.edition, r.insee, r.loyer_m2])).toEqual([
      [2023, '59512', 10],
      [2024, '59350', 14.5],
      [2024, '59512', 11],
    ]);
  });

  it('leaves the table as it was when one file of an import fails', async () => {
    const ligne = `"7";"59350";"Lille";"200093201";"59";"32";14;12;16;"commune";2400;4800;0,74`;
    const avant = await fichier('avant/pred-app-mef-dhup-2025.csv', `${ENTETE_2025}\r\n${ligne}\r\n`);
    await importLoyers(db.db, avant);
    const change = await fichier(
      'apres/pred-app-mef-dhup-2025.csv',
      `${ENTETE_2025}\r\n${ligne.replace(';14;', ';15;')}\r\n`,
    );
    const illisible = await fichier(
      'apres/pred-mai-mef-dhup-2025.csv',
      `${ENTETE_2025}\r\n"7";"59350";"Lille";"200093201";"59";"32";-;-;-;"commune";2400;4800;0,74\r\n`,
    );
    await expect(importLoyers(db.db, [change, illisible])).rejects.toThrow(/aucune commune lisible/);
    expect((await lignes()).map((r) => [r.type_logement, r.loyer_m2])).toEqual([['appartement', 14]]);
  });

  it('refuses two files of the same type and edition in one import', async () => {
    const corps = `${ENTETE_2025}\r\n"7";"59350";"Lille";"200093201";"59";"32";14;12;16;"commune";2400;4800;0,74\r\n`;
    const a = await fichier('a/pred-app-mef-dhup-2025.csv', corps);
    const b = await fichier('b/pred-app-mef-dhup_2025.csv', corps);
    await expect(importLoyers(db.db, [a, b])).rejects.toThrow(/un seul fichier par type et par édition/);
  });
});

describe('the rules of the names and of nature', () => {
  it('tells the type from the publisher’s names and their variants', () => {
    expect(typeDuNom('pred-app-mef-dhup.csv')).toEqual({ type: 'appartement' });
    expect(typeDuNom('pred-app12-mef-dhup.csv')).toEqual({ type: 'appartement_t1_t2' });
    expect(typeDuNom('pred-app3-mef-dhup.csv')).toEqual({ type: 'appartement_t3_plus' });
    expect(typeDuNom('pred-mai-mef-dhup.csv.gz')).toEqual({ type: 'maison' });
    expect(typeDuNom('indicateurs-loyers-appartements.csv')).toEqual({ type: 'appartement' });
    expect(typeDuNom('Indicateurs loyers Maisons.CSV')).toEqual({ type: 'maison' });
    expect(typeDuNom('loyers_appartements_T1-T2_2024.csv')).toEqual({ type: 'appartement_t1_t2' });
    expect(typeDuNom('loyers-t3-plus.csv')).toEqual({ type: 'appartement_t3_plus' });
    expect(typeDuNom('pred-app12-app3.csv')).toHaveProperty('motif');
    expect(typeDuNom('maisongle.csv')).toHaveProperty('motif');
  });

  it('tells the edition from a year standing as a word, in the name then the folder', () => {
    expect(editionDe('/x/pred-app-mef-dhup_2025_EXCERPT.csv', 'depuis 2022')).toEqual({
      edition: 2025,
      lue: 'le nom du fichier',
    });
    expect(editionDe('/x/2023/pred-app-mef-dhup.csv', 'depuis 2022')).toEqual({
      edition: 2023,
      lue: 'le nom du dossier',
    });
    // A data.gouv.fr upload folder is a timestamp, not a year.
    expect(editionDe('/x/20251211-145010/pred-app-mef-dhup.csv', 'depuis 2022')).toHaveProperty('motif');
    expect(editionDe('/x/pred-app-2024-vs-2025.csv', 'depuis 2022')).toEqual({
      motif: expect.stringContaining('plusieurs années'),
    });
    expect(editionDe('/x/indicateurs-loyers-appartements.csv', '2018')).toEqual({
      edition: 2018,
      lue: 'la disposition de 2018',
    });
  });

  it('calls observed only a commune-level prediction that the commune’s count does not contradict', () => {
    expect(natureLoyer('commune', 205)).toBe('observe_commune');
    expect(natureLoyer('commune', null)).toBe('observe_commune');
    expect(natureLoyer('commune', 0)).toBe('predit_maille');
    expect(natureLoyer('maille', 900)).toBe('predit_maille');
    expect(natureLoyer('epci', 35)).toBe('predit_maille');
  });
});
