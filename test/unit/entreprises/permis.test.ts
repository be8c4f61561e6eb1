import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { importPermis, permisSource } from '../../../domain/urbanisme/import-permis.ts';
import { permisOperations } from '../../../domain/urbanisme/permis.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { ADRESSES, insererAdresses, nomsDansLaBase } from './support.ts';

// ---------------------------------------------------------------------------------------------------------------------
// Sitadel fixtures with the real column codes: the DiDo export's first line holds long labels, the second the codes.
// ---------------------------------------------------------------------------------------------------------------------

const COLONNES_LOGEMENTS = [
  ...['REG_CODE', 'REG_LIBELLE', 'DEP_CODE', 'DEP_LIBELLE', 'COMM', 'TYPE_DAU', 'NUM_DAU', 'ETAT_DAU'],
  ...['DATE_REELLE_AUTORISATION', 'DATE_REELLE_DOC', 'DATE_REELLE_DAACT', 'DPC_AUT', 'DPC_DOC', 'DPC_DERN'],
  ...[
    'CAT_DEM',
    'SIREN_DEM',
    'SIRET_DEM',
    'DENOM_DEM',
    'CJ_DEM',
    'APE_DEM',
    'CODPOST_DEM',
    'LOCALITE_DEM',
    'REC_ARCHI',
  ],
  ...['ADR_NUM_TER', 'ADR_TYPEVOIE_TER', 'ADR_LIBVOIE_TER', 'ADR_LIEUDIT_TER', 'ADR_LOCALITE_TER', 'ADR_CODPOST_TER'],
  ...['SEC_CADASTRE1', 'NUM_CADASTRE1', 'SEC_CADASTRE2', 'NUM_CADASTRE2', 'SEC_CADASTRE3', 'NUM_CADASTRE3'],
  ...['SUPERFICIE_TERRAIN', 'ZONE_OP', 'NATURE_PROJET_DECLAREE', 'NATURE_PROJET_COMPLETEE', 'DESTINATION_PRINCIPALE'],
  ...['NB_LGT_TOT_CREES', 'NB_LGT_IND_CREES', 'NB_LGT_COL_CREES', 'NB_LGT_DEMOLIS', 'NB_LGT_1P', 'NB_LGT_2P'],
  ...['NB_LGT_3P', 'NB_LGT_4P', 'NB_LGT_5P', 'NB_LGT_6P_PLUS', 'NB_LGT_PRET_LOC_SOCIAL', 'NB_LGT_ACC_SOC_HORS_PTZ'],
  ...['NB_LGT_PTZ', 'SURF_HAB_AVANT', 'SURF_HAB_CREEE', 'SURF_HAB_DEMOLIE', 'SURF_LOC_AVANT', 'SURF_LOC_CREEE'],
  ...['SURF_LOC_DEMOLIE', 'AN_DEPOT', 'DPC_PREM'],
];

function ligne(colonnes: string[], valeurs: Record<string, string | number>): string {
  return colonnes.map((c) => String(valeurs[c] ?? '')).join(';');
}

const COMMUN = {
  REG_CODE: 75,
  REG_LIBELLE: 'Nouvelle-Aquitaine',
  DEP_CODE: 33,
  DEP_LIBELLE: 'Gironde',
  COMM: 33234,
  ADR_LOCALITE_TER: 'LATRESNE',
  ADR_CODPOST_TER: 33360,
};

const LOGEMENTS = [
  // Labels line, as DiDo writes it.
  COLONNES_LOGEMENTS.map((c) => `Libellé de ${c}`).join(';'),
  COLONNES_LOGEMENTS.join(';'),
  // A house built by an SCI on parcel AB 123 (12 rue de la Liberté): authorised, started, completed.
  ligne(COLONNES_LOGEMENTS, {
    ...COMMUN,
    TYPE_DAU: 'PC',
    NUM_DAU: '0332342200012',
    ETAT_DAU: 6,
    DATE_REELLE_AUTORISATION: '2022-03-15',
    DATE_REELLE_DOC: '2022-06-01',
    DATE_REELLE_DAACT: '2023-09-30',
    DPC_AUT: '2022-04',
    CAT_DEM: 40,
    SIREN_DEM: '912345678',
    SIRET_DEM: '91234567800015',
    DENOM_DEM: 'SCI DES TILLEULS',
    CJ_DEM: 6540,
    APE_DEM: '68.20B',
    CODPOST_DEM: 33360,
    LOCALITE_DEM: 'LATRESNE',
    ADR_NUM_TER: 12,
    ADR_TYPEVOIE_TER: 'RUE',
    ADR_LIBVOIE_TER: 'DE LA LIBERTE',
    SEC_CADASTRE1: 'AB',
    NUM_CADASTRE1: 123,
    SUPERFICIE_TERRAIN: 640,
    NATURE_PROJET_DECLAREE: 1,
    NATURE_PROJET_COMPLETEE: 1,
    DESTINATION_PRINCIPALE: 1,
    NB_LGT_TOT_CREES: 1,
    NB_LGT_IND_CREES: 1,
    NB_LGT_COL_CREES: 0,
    NB_LGT_4P: 1,
    SURF_HAB_CREEE: 112,
    AN_DEPOT: 2022,
  }),
  // An extension by a private person on the same parcel. The name below stands for a leak in the file: it must not
  // be stored, nor the applicant's locality.
  ligne(COLONNES_LOGEMENTS, {
    ...COMMUN,
    TYPE_DAU: 'DP',
    NUM_DAU: '0332342300045',
    ETAT_DAU: 2,
    DATE_REELLE_AUTORISATION: '2023-05-10',
    CAT_DEM: 10,
    DENOM_DEM: 'DUPONT JEAN-MICHEL',
    CODPOST_DEM: 33360,
    LOCALITE_DEM: 'CAMBLANES-ET-MEYNAC',
    ADR_NUM_TER: 12,
    ADR_TYPEVOIE_TER: 'R',
    ADR_LIBVOIE_TER: 'DE LA LIBERTE',
    SEC_CADASTRE1: 'AB',
    NUM_CADASTRE1: '0123',
    SUPERFICIE_TERRAIN: 0,
    NATURE_PROJET_DECLAREE: 2,
    NB_LGT_TOT_CREES: 1,
    NB_LGT_IND_CREES: 1,
    SURF_HAB_CREEE: 35,
  }),
  // 14 rue de la Liberté, attached by its address only, with an announced opening of works in the future.
  ligne(COLONNES_LOGEMENTS, {
    ...COMMUN,
    TYPE_DAU: 'PC',
    NUM_DAU: '0332342400003',
    ETAT_DAU: 2,
    DATE_REELLE_AUTORISATION: '2024-02-01',
    DATE_REELLE_DOC: '2099-01-15',
    CAT_DEM: 30,
    SIREN_DEM: '552100554',
    DENOM_DEM: 'PROMOTEUR GIRONDIN',
    CJ_DEM: 5710,
    ADR_NUM_TER: 14,
    ADR_TYPEVOIE_TER: 'RUE',
    ADR_LIBVOIE_TER: 'DE LA LIBERTE',
    NB_LGT_TOT_CREES: 6,
    NB_LGT_COL_CREES: 6,
    NB_LGT_PRET_LOC_SOCIAL: 2,
  }),
  // Rejected: an impossible date, a commune that is no INSEE code.
  ligne(COLONNES_LOGEMENTS, {
    ...COMMUN,
    TYPE_DAU: 'PC',
    NUM_DAU: '0332342400004',
    DATE_REELLE_AUTORISATION: '2024-02-30',
  }),
  ligne(COLONNES_LOGEMENTS, { ...COMMUN, COMM: 'XYZ', TYPE_DAU: 'PC', NUM_DAU: '0332342400005' }),
].join('\n');

const COLONNES_LOCAUX = COLONNES_LOGEMENTS.filter((c) => !c.startsWith('NB_LGT'));
const LOCAUX = [
  COLONNES_LOCAUX.join(';'),
  ligne(COLONNES_LOCAUX, {
    ...COMMUN,
    TYPE_DAU: 'PC',
    NUM_DAU: '0332342300077',
    ETAT_DAU: 5,
    DATE_REELLE_AUTORISATION: '2023-11-20',
    DATE_REELLE_DOC: '2024-01-08',
    CAT_DEM: 40,
    SIREN_DEM: '552100554',
    DENOM_DEM: 'PROMOTEUR GIRONDIN',
    CJ_DEM: 5710,
    SEC_CADASTRE1: 'AB',
    NUM_CADASTRE1: 124,
    SEC_CADASTRE2: 'AB',
    NUM_CADASTRE2: 125,
    DESTINATION_PRINCIPALE: 3,
    SURF_LOC_CREEE: 480,
  }),
].join('\r\n');

const COLONNES_DEMOLIR = [
  ...['REG_CODE', 'DEP_CODE', 'COMM', 'NUM_PD', 'ETAT_PD', 'DATE_REELLE_AUTORISATION', 'CAT_DEM', 'SIREN_DEM'],
  ...['DENOM_DEM', 'CJ_DEM', 'ADR_NUM_TER', 'ADR_LIBVOIE_TER', 'ADR_CODPOST_TER', 'SEC_CADASTRE1', 'NUM_CADASTRE1'],
  ...['NB_LGT_DEMOLIS', 'AN_DEPOT'],
];
const DEMOLIR = [
  COLONNES_DEMOLIR.join(';'),
  ligne(COLONNES_DEMOLIR, {
    ...COMMUN,
    NUM_PD: '0332342100002',
    ETAT_PD: 2,
    DATE_REELLE_AUTORISATION: '2021-07-01',
    CAT_DEM: 10,
    ADR_NUM_TER: 3,
    ADR_LIBVOIE_TER: 'AV DE LA LIBERATION',
    SEC_CADASTRE1: 'AC',
    NUM_CADASTRE1: 7,
    NB_LGT_DEMOLIS: 1,
    AN_DEPOT: 2021,
  }),
].join('\n');

const COLONNES_AMENAGER = [
  'REG_CODE',
  'DEP_CODE',
  'COMM',
  'NUM_PA',
  'ETAT_PA',
  'DATE_REELLE_AUTORISATION',
  'SUPERFICIE_TERRAIN',
  'SEC_CADASTRE1',
  'NUM_CADASTRE1',
];
const AMENAGER = [
  COLONNES_AMENAGER.join(';'),
  ligne(COLONNES_AMENAGER, {
    ...COMMUN,
    NUM_PA: '0332342000001',
    ETAT_PA: 6,
    DATE_REELLE_AUTORISATION: '2020-10-12',
    SUPERFICIE_TERRAIN: 12000,
    SEC_CADASTRE1: 'AC',
    NUM_CADASTRE1: 7,
  }),
].join('\n');

let t: TestApp;
let dir: string;
let org: { id: string; cle: string };
const fichiers: Record<string, string> = {};

beforeAll(async () => {
  t = await createTestApp({ operations: permisOperations as Operation[] });
  dir = await mkdtemp(path.join(tmpdir(), 'permis-'));
  await insererAdresses(t.db);
  for (const [nom, contenu] of Object.entries({
    logements: LOGEMENTS,
    locaux: LOCAUX,
    demolir: DEMOLIR,
    amenager: AMENAGER,
  })) {
    fichiers[nom] = path.join(dir, `${nom}.csv`);
    await writeFile(fichiers[nom], contenu);
  }
  org = await t.organisation({ acces: 'usage' });
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const get = (url: string, cle = org.cle) =>
  t.app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: `Bearer ${cle}` } });

async function debits(): Promise<number> {
  const res = await t.admin('GET', `/organisations/${org.id}/releve?limite=200`);
  return (res.body.mouvements as Array<{ genre: string; operation: string; credits: number }>)
    .filter((m) => m.genre === 'debit' && m.operation === 'permis_adresse')
    .reduce((s, m) => s + Math.abs(m.credits), 0);
}

describe('Sitadel import', () => {
  it('reads the housing file under its labels line, rejects bad rows, and never stores a private applicant', async () => {
    const report = await importPermis(t.db, fichiers.logements);
    expect(report.lus).toBe(5);
    expect(report.gardes).toBe(3);
    expect(report.rejetes).toEqual([
      { ligne: 6, motif: 'date invalide (DATE_REELLE_AUTORISATION = 2024-02-30)' },
      { ligne: 7, motif: 'code commune invalide (XYZ)' },
    ]);
    expect(report.details).toContain('fichier : logements');
    expect(report.details).toContain('demandées par une personne physique (demandeur non gardé) : 1');
    expect(report.details).toContain('terrains rattachés à un numéro de la BAN : 3');
    const { rows } = await t.db.query(
      `SELECT type, numero, demandeur_personne_physique, demandeur_denomination, demandeur_siren, parcelles, cle_ban,
              superficie_terrain, champs
         FROM permis WHERE numero = '0332342300045'`,
    );
    expect(rows[0]).toMatchObject({
      type: 'DP',
      demandeur_personne_physique: true,
      demandeur_denomination: null,
      demandeur_siren: null,
      parcelles: ['33234000AB0123'],
      cle_ban: ADRESSES.liberte12,
      superficie_terrain: null,
    });
    expect(rows[0].champs).toMatchObject({ CAT_DEM: '10', ETAT_DAU: '2', NATURE_PROJET_DECLAREE: '2' });
    expect(rows[0].champs).not.toHaveProperty('LOCALITE_DEM');
    expect(rows[0].champs).not.toHaveProperty('CODPOST_DEM');
    expect(await nomsDansLaBase(t.db, ['DUPONT', 'JEAN-MICHEL', 'CAMBLANES'])).toEqual([]);
  });

  it('recognises the premises, demolition and development files, and changes nothing on a second import', async () => {
    const locaux = await permisSource.run(t.db, fichiers.locaux, { sandbox: false, onProgress: () => {} });
    expect(locaux).toMatchObject({ lus: 1, gardes: 1 });
    expect(locaux.details[0]).toBe('fichier : locaux');
    const demolir = await importPermis(t.db, fichiers.demolir);
    expect(demolir.details[0]).toBe('fichier : demolir');
    const amenager = await importPermis(t.db, fichiers.amenager);
    expect(amenager.details[0]).toBe('fichier : amenager');
    const { rows } = await t.db.query(
      `SELECT type, source, etat, parcelles, cle_ban FROM permis WHERE source IN ('demolir', 'amenager') ORDER BY type`,
    );
    expect(rows).toEqual([
      { type: 'PA', source: 'amenager', etat: 'achevee', parcelles: ['33234000AC0007'], cle_ban: null },
      {
        type: 'PD',
        source: 'demolir',
        etat: 'autorisee',
        parcelles: ['33234000AC0007'],
        cle_ban: ADRESSES.liberation3,
      },
    ]);
    const again = await importPermis(t.db, fichiers.logements);
    expect(again.details[1]).toBe('autorisations : 3 (0 ajoutés, 0 modifiés, 3 inchangés)');
  });

  it('refuses a file that is not a Sitadel file', async () => {
    const file = path.join(dir, 'autre.csv');
    await writeFile(file, 'a;b;c\n1;2;3\n4;5;6\n');
    await expect(importPermis(t.db, file)).rejects.toThrow(ImportError);
  });
});

describe('permis_adresse over HTTP', () => {
  it('serves the permits of an address by parcel, newest first, without naming a private applicant; 3 credits', async () => {
    const before = await debits();
    const res = await get(`/adresses/${ADRESSES.liberte12}/permis`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      cle_ban: ADRESSES.liberte12,
      id_parcelle: null,
      insee: '33234',
      parcelles: ['33234000AB0123'],
    });
    expect(body.permis.map((p: { numero: string }) => p.numero)).toEqual(['0332342300045', '0332342200012']);
    const [dp, pc] = body.permis;
    expect(dp).toMatchObject({
      type: 'DP',
      source: 'logements',
      etat: { code: '2', libelle: 'autorisee' },
      depose_en: 2023,
      demandeur: null,
      rattachement: 'parcelle',
      superficie_terrain_m2: null,
      date_prevue: false,
      nature: { declaree: '2', completee: null, libelle: 'travaux sur construction existante' },
    });
    expect(pc).toEqual({
      numero: '0332342200012',
      type: 'PC',
      source: 'logements',
      etat: { code: '6', libelle: 'achevee' },
      depose_en: 2022,
      autorise_le: '2022-03-15',
      ouvert_le: '2022-06-01',
      acheve_le: '2023-09-30',
      date_prevue: false,
      nature: { declaree: '1', completee: '1', libelle: 'nouvelle construction' },
      destination: '1',
      logements: {
        total: 1,
        individuels: 1,
        collectifs: 0,
        par_taille: { p1: null, p2: null, p3: null, p4: 1, p5: null, p6_et_plus: null },
        sociaux: null,
        accession_sociale: null,
        ptz: null,
        demolis: null,
      },
      surfaces: {
        habitation_creee_m2: 112,
        habitation_demolie_m2: null,
        locaux_crees_m2: null,
        locaux_demolis_m2: null,
      },
      superficie_terrain_m2: 640,
      demandeur: {
        denomination: 'SCI DES TILLEULS',
        siren: '912345678',
        siret: '91234567800015',
        categorie_juridique: '6540',
        code_ape: '68.20B',
      },
      terrain: {
        commune: '33234',
        numero: '12',
        voie: 'RUE DE LA LIBERTE',
        lieu_dit: null,
        code_postal: '33360',
        localite: 'LATRESNE',
      },
      parcelles: ['33234000AB0123'],
      champs: expect.objectContaining({ REG_CODE: '75', DPC_AUT: '2022-04', CAT_DEM: '40', CODPOST_DEM: '33360' }),
      rattachement: 'parcelle',
    });
    expect(JSON.stringify(body)).not.toMatch(/DUPONT|CAMBLANES/);
    expect(body.qualite).toMatchObject({ n: 2, provenance: 'mesure', drapeaux: [], donnees_du: '2023-09-30' });
    expect(body.credits.debites).toBe(3);
    expect(await debits()).toBe(before + 3);

    const depuis = (await get(`/adresses/${ADRESSES.liberte12}/permis?depuis=2023-01-01`)).json();
    expect(depuis.permis.map((p: { numero: string }) => p.numero)).toEqual(['0332342300045']);
  });

  it('attaches by the declared address when the parcel is unknown, and says when a date is only announced', async () => {
    const body = (await get(`/adresses/${ADRESSES.liberte14}/permis`)).json();
    expect(body.permis).toHaveLength(1);
    expect(body.permis[0]).toMatchObject({
      numero: '0332342400003',
      rattachement: 'adresse',
      ouvert_le: '2099-01-15',
      date_prevue: true,
      logements: { total: 6, collectifs: 6, sociaux: 2 },
      demandeur: { denomination: 'PROMOTEUR GIRONDIN', siren: '552100554' },
    });
    expect(body.qualite.drapeaux).toEqual(['date_estimee']);
    // The bis of the same number is another address.
    const bis = (await get('/adresses/33234_0160_00014_bis/permis')).json();
    expect(bis.permis).toEqual([]);
  });

  it('serves the permits of a parcel', async () => {
    const res = await get('/parcelles/33234000ab0124/permis');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      cle_ban: null,
      id_parcelle: '33234000AB0124',
      insee: '33234',
      parcelles: ['33234000AB0124'],
    });
    expect(body.permis).toHaveLength(1);
    expect(body.permis[0]).toMatchObject({
      source: 'locaux',
      etat: { code: '5', libelle: 'commencee' },
      destination: 'bureaux',
      logements: null,
      surfaces: { locaux_crees_m2: 480 },
      parcelles: ['33234000AB0124', '33234000AB0125'],
      rattachement: 'parcelle',
    });
    const demolition = (await get('/parcelles/33234000AC0007/permis')).json();
    expect(demolition.permis.map((p: { type: string }) => p.type)).toEqual(['PD', 'PA']);
    expect(demolition.permis[0]).toMatchObject({ demandeur: null, logements: { demolis: 1 } });
  });

  it('answers 404 without debit for an unknown address or a street key, 400 for a malformed parcel or date', async () => {
    const before = await debits();
    const inconnue = await get('/adresses/33234_9999_00001/permis');
    expect(inconnue.statusCode).toBe(404);
    expect(inconnue.json().code).toBe('adresse_introuvable');
    const voie = await get(`/adresses/${ADRESSES.rueLiberte}/permis`);
    expect(voie.statusCode).toBe(404);
    expect(voie.json().code).toBe('ressource_absente');
    expect(await debits()).toBe(before);
    for (const depuis of ['2023-13-01', '2023-02-30', 'hier']) {
      const res = await get(`/adresses/${ADRESSES.liberte12}/permis?depuis=${depuis}`);
      expect(res.statusCode, depuis).toBe(400);
      expect(res.json().erreurs[0].champ).toBe('depuis');
    }
    const parcelle = await get('/parcelles/AB0124/permis');
    expect(parcelle.statusCode).toBe(400);
    expect(parcelle.json().code).toBe('parametres_invalides');
  });
});
