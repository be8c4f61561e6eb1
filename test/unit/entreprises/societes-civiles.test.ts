import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { bodaccSource, importBodacc } from '../../../domain/entreprises/import-bodacc.ts';
import { importSirene } from '../../../domain/entreprises/import-sirene.ts';
import { societesCiviles } from '../../../domain/entreprises/societes-civiles.ts';
import { ImportError } from '../../../domain/import/source.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { ADRESSES, insererAdresses, nomsDansLaBase } from './support.ts';

// ---------------------------------------------------------------------------------------------------------------------
// A BODACC export with the DILA's columns (JSON inside some of them) and SIRENE extracts with the stock headers.
// ---------------------------------------------------------------------------------------------------------------------

const COLONNES = [
  ...[
    'id',
    'publicationavis',
    'parution',
    'dateparution',
    'numeroannonce',
    'typeavis',
    'familleavis',
    'familleavis_lib',
  ],
  ...['numerodepartement', 'departement_nom_officiel', 'region_code', 'tribunal', 'ville', 'cp', 'registre'],
  ...['commercant', 'listepersonnes', 'listeetablissements', 'jugement', 'acte', 'modificationsgenerales'],
  ...['radiationaurcs', 'depot', 'listeprecedentproprietaire', 'listeprecedentexploitant', 'divers'],
  ...['parutionavisprecedent'],
];

function csv(valeur: unknown): string {
  if (valeur === undefined || valeur === null) return '';
  const texte = typeof valeur === 'string' ? valeur : JSON.stringify(valeur);
  return /[;"\n]/.test(texte) ? `"${texte.replace(/"/g, '""')}"` : texte;
}

function avis(v: Record<string, unknown>): string {
  const commun = {
    publicationavis: 'A',
    typeavis: 'annonce',
    numerodepartement: '33',
    departement_nom_officiel: 'Gironde',
    region_code: '75',
    tribunal: 'GREFFE DU TRIBUNAL DE COMMERCE DE BORDEAUX',
    ville: 'Latresne',
    cp: '33360',
  };
  return COLONNES.map((c) => csv({ ...commun, ...v }[c])).join(';');
}

const SIEGE_LIBERATION = {
  numeroVoie: '3',
  typeVoie: 'av',
  nomVoie: 'de la Libération',
  codePostal: '33360',
  ville: 'Latresne',
};

const BODACC = [
  COLONNES.join(';'),
  // The SCI des Tilleuls registers at 3 avenue de la Libération; its manager's name is in `administration`.
  avis({
    id: 'A201900701234',
    parution: '20190070',
    dateparution: '2019-04-10',
    numeroannonce: 1234,
    familleavis: 'creation',
    familleavis_lib: 'Créations',
    registre: '912345678,912 345 678',
    commercant: 'SCI DES TILLEULS',
    listepersonnes: {
      personne: {
        typePersonne: 'pm',
        denomination: 'SCI DES TILLEULS',
        formeJuridique: 'Société civile immobilière',
        administration: 'Gérant : MARTIN Paul',
        capital: { montantCapital: '1000', devise: 'EUR' },
        adresseSiegeSocial: SIEGE_LIBERATION,
        numeroImmatriculation: { numeroIdentification: '912 345 678', codeRCS: 'RCS', nomGreffeImmat: 'Bordeaux' },
      },
    },
    acte: {
      creation: {
        categorieCreation:
          "Immatriculation d'une personne morale (B, C, D) suite à création d'un établissement principal",
        dateCommencementActivite: '2019-04-01',
      },
      dateImmatriculation: '2019-04-05',
      descriptif: 'Société civile immobilière. Gérant : MARTIN Paul. Associé : LEROY Claire',
    },
  }),
  // Its managers change (named in the text, which is never kept).
  avis({
    id: 'A202101055555',
    parution: '20210105',
    dateparution: '2021-06-02',
    numeroannonce: 5555,
    familleavis: 'modification',
    familleavis_lib: 'Modifications diverses',
    registre: '912345678,912 345 678',
    commercant: 'SCI DES TILLEULS',
    listepersonnes: {
      personne: {
        typePersonne: 'pm',
        denomination: 'SCI DES TILLEULS',
        formeJuridique: 'Société civile immobilière',
        administration: 'Gérant : DURAND Sophie',
        adresseSiegeSocial: SIEGE_LIBERATION,
      },
    },
    modificationsgenerales: {
      descriptif: "Modification survenue sur l'administration. Gérant partant : MARTIN Paul. Gérant : DURAND Sophie",
    },
    // Free text over two lines, as the export writes it.
    divers: 'Avis rédigé\nsur deux lignes ; voir le greffe',
  }),
  // The SCI Le Verger, whose notice gives no SIREN: found by its name and postal code in SIRENE.
  avis({
    id: 'A202102077777',
    parution: '20210207',
    dateparution: '2021-10-20',
    numeroannonce: 7777,
    familleavis: 'immatriculation',
    familleavis_lib: 'Immatriculations',
    commercant: 'SCI LE VERGER',
    listepersonnes: {
      personne: {
        typePersonne: 'pm',
        denomination: 'SCI Le Verger',
        formeJuridique: 'Société civile immobilière',
        adresseSiegeSocial: {
          numeroVoie: '3',
          typeVoie: 'avenue',
          nomVoie: 'de la Libération',
          codePostal: '33360',
          ville: 'Latresne',
        },
      },
    },
    acte: { creation: { categorieCreation: 'Immatriculation suite à transfert de siège' } },
  }),
  // An SCI removed in 2018, before the DPE of the address.
  avis({
    id: 'B201800312345',
    publicationavis: 'B',
    parution: '20180031',
    dateparution: '2018-05-03',
    numeroannonce: 12345,
    familleavis: 'radiation',
    familleavis_lib: 'Radiations',
    registre: '934567890,934 567 890',
    commercant: 'SCI ANCIENNE',
    listepersonnes: {
      personne: {
        typePersonne: 'pm',
        denomination: 'SCI ANCIENNE',
        formeJuridique: 'Société civile immobilière',
        adresseSiegeSocial: SIEGE_LIBERATION,
      },
    },
    radiationaurcs: { radiationPM: 'Radiation de la personne morale', dateCessationActivitePM: '2018-04-30' },
  }),
  // A limited company at the same address: not a civil company.
  avis({
    id: 'A202000999999',
    parution: '20200099',
    dateparution: '2020-05-20',
    numeroannonce: 9999,
    familleavis: 'creation',
    familleavis_lib: 'Créations',
    registre: '914567890',
    commercant: 'BOULANGERIE DU CENTRE',
    listepersonnes: {
      personne: {
        typePersonne: 'pm',
        denomination: 'BOULANGERIE DU CENTRE',
        formeJuridique: 'Société à responsabilité limitée',
        adresseSiegeSocial: SIEGE_LIBERATION,
      },
    },
  }),
  // A judgment about a natural person living at the address: never named, never attached to it.
  avis({
    id: 'A202200088888',
    parution: '20220008',
    dateparution: '2022-01-12',
    numeroannonce: 8888,
    familleavis: 'collective',
    familleavis_lib: 'Procédures collectives',
    registre: '478912345,478 912 345',
    commercant: 'DUPONT Jean',
    listepersonnes: {
      personne: {
        typePersonne: 'pp',
        nom: 'DUPONT',
        prenom: 'Jean',
        nomCommercial: 'Chez Dupont',
        adresseSiegeSocial: SIEGE_LIBERATION,
      },
    },
    jugement: {
      famille: "Jugement d'ouverture",
      nature: "Jugement d'ouverture d'une procédure de liquidation judiciaire",
      date: '2022-01-05',
      complementJugement: 'Liquidateur : Maître BERNARD Luc. Débiteur : DUPONT Jean',
    },
  }),
  // Rejected: no publication date.
  avis({ id: 'A202200099999', dateparution: '', familleavis: 'creation' }),
].join('\n');

const UL_HEADER =
  'siren,statutDiffusionUniteLegale,unitePurgeeUniteLegale,dateCreationUniteLegale,sigleUniteLegale,sexeUniteLegale,prenom1UniteLegale,prenom2UniteLegale,prenom3UniteLegale,prenom4UniteLegale,prenomUsuelUniteLegale,pseudonymeUniteLegale,identifiantAssociationUniteLegale,trancheEffectifsUniteLegale,anneeEffectifsUniteLegale,dateDernierTraitementUniteLegale,nombrePeriodesUniteLegale,categorieEntreprise,anneeCategorieEntreprise,dateDebut,etatAdministratifUniteLegale,nomUniteLegale,nomUsageUniteLegale,denominationUniteLegale,denominationUsuelle1UniteLegale,denominationUsuelle2UniteLegale,denominationUsuelle3UniteLegale,categorieJuridiqueUniteLegale,activitePrincipaleUniteLegale,nomenclatureActivitePrincipaleUniteLegale,nicSiegeUniteLegale,economieSocialeSolidaireUniteLegale,caractereEmployeurUniteLegale';
const UNITES = [
  UL_HEADER,
  '923456789,O,,2021-03-01,,,,,,,,,,NN,,2024-01-02T10:00:00,1,PME,2021,2021-03-01,A,,,SCI LE VERGER,,,,6540,68.20B,NAFRev2,00012,,N',
  '914567890,O,,2020-05-12,,,,,,,,,,NN,,2024-01-02T10:00:00,1,PME,2021,2020-05-12,A,,,BOULANGERIE DU CENTRE,,,,5499,10.71C,NAFRev2,00019,,O',
].join('\n');

const ETAB_HEADER =
  'siren,nic,siret,statutDiffusionEtablissement,dateCreationEtablissement,trancheEffectifsEtablissement,anneeEffectifsEtablissement,activitePrincipaleRegistreMetiersEtablissement,dateDernierTraitementEtablissement,etablissementSiege,nombrePeriodesEtablissement,complementAdresseEtablissement,numeroVoieEtablissement,indiceRepetitionEtablissement,typeVoieEtablissement,libelleVoieEtablissement,codePostalEtablissement,libelleCommuneEtablissement,libelleCommuneEtrangerEtablissement,distributionSpecialeEtablissement,codeCommuneEtablissement,codeCedexEtablissement,libelleCedexEtablissement,codePaysEtrangerEtablissement,libellePaysEtrangerEtablissement,complementAdresse2Etablissement,numeroVoie2Etablissement,indiceRepetition2Etablissement,typeVoie2Etablissement,libelleVoie2Etablissement,codePostal2Etablissement,libelleCommune2Etablissement,libelleCommuneEtranger2Etablissement,distributionSpeciale2Etablissement,codeCommune2Etablissement,codeCedex2Etablissement,libelleCedex2Etablissement,codePaysEtranger2Etablissement,libellePaysEtranger2Etablissement,dateDebut,etatAdministratifEtablissement,enseigne1Etablissement,enseigne2Etablissement,enseigne3Etablissement,denominationUsuelleEtablissement,activitePrincipaleEtablissement,nomenclatureActivitePrincipaleEtablissement,caractereEmployeurEtablissement';
function etablissement(
  siren: string,
  nic: string,
  cree: string,
  numero: string,
  type: string,
  voie: string,
  enseigne = '',
): string {
  const v: string[] = new Array(ETAB_HEADER.split(',').length).fill('');
  const set = (name: string, value: string) => (v[ETAB_HEADER.split(',').indexOf(name)] = value);
  set('siren', siren);
  set('nic', nic);
  set('siret', siren + nic);
  set('statutDiffusionEtablissement', 'O');
  set('dateCreationEtablissement', cree);
  set('etablissementSiege', 'true');
  set('numeroVoieEtablissement', numero);
  set('typeVoieEtablissement', type);
  set('libelleVoieEtablissement', voie);
  set('codePostalEtablissement', '33360');
  set('libelleCommuneEtablissement', 'LATRESNE');
  set('codeCommuneEtablissement', '33234');
  set('dateDebut', cree);
  set('etatAdministratifEtablissement', 'A');
  set('enseigne1Etablissement', enseigne);
  set('activitePrincipaleEtablissement', '68.20B');
  // Domiciliation at a manager's, as SIRENE often writes it: never kept.
  set('complementAdresseEtablissement', 'CHEZ MONSIEUR ROBERT PIERRE');
  return v.join(',');
}
const ETABLISSEMENTS = [
  ETAB_HEADER,
  etablissement('923456789', '00012', '2021-03-01', '3', 'AV', 'DE LA LIBERATION', 'LE VERGER'),
  etablissement('914567890', '00019', '2020-05-12', '3', 'AV', 'DE LA LIBERATION', 'AU BON PAIN'),
].join('\n');

let t: TestApp;
let dir: string;
let org: { id: string; cle: string };

beforeAll(async () => {
  t = await createTestApp({ operations: [societesCiviles] as Operation[] });
  dir = await mkdtemp(path.join(tmpdir(), 'bodacc-'));
  await insererAdresses(t.db);
  await t.db.query(
    `INSERT INTO dpe (dataset, numero_dpe, format, cle_ban, rattachement_incertain, etabli_le, fin_validite,
                      fin_validite_calculee, etiquette)
     VALUES ('live', '2033E0000001A', 'xml', $1, false, '2020-01-15', '2030-01-14', false, 'D')`,
    [ADRESSES.liberation3],
  );
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
    .filter((m) => m.genre === 'debit' && m.operation === 'societes_civiles')
    .reduce((s, m) => s + Math.abs(m.credits), 0);
}

describe('BODACC import', () => {
  it('keeps notices about natural persons without their names, and no manager or partner anywhere', async () => {
    const file = path.join(dir, 'annonces-commerciales.csv');
    await writeFile(file, BODACC);
    const report = await importBodacc(t.db, file);
    expect(report.lus).toBe(7);
    expect(report.gardes).toBe(6);
    expect(report.rejetes).toEqual([{ ligne: 9, motif: 'dateparution invalide (absente)' }]);
    expect(report.details).toContain('sur des personnes physiques (gardés sans nom) : 1');
    expect(report.details).toContain('sur des sociétés civiles : 4');
    expect(report.details).toContain('sièges rattachés à un numéro de la BAN : 5');

    const pp = await t.db.query(`SELECT * FROM avis_bodacc WHERE id = 'A202200088888'`);
    expect(pp.rows[0]).toMatchObject({
      porte_sur_personne_physique: true,
      denomination: null,
      forme_juridique: null,
      siege_voie: null,
      cle_ban: null,
      sirens: ['478912345'],
      categorie: 'procedure',
      date_effet: expect.any(Date),
      resume:
        "Jugement d'ouverture d'une procédure de liquidation judiciaire ; personne physique (non nommée) ; date d’effet 2022-01-05.",
    });
    expect(await nomsDansLaBase(t.db, ['DUPONT', 'MARTIN', 'DURAND', 'LEROY', 'BERNARD', 'Sophie'])).toEqual([]);

    const sci = await t.db.query(
      `SELECT categorie, resume, sirens, societe_civile, cle_ban FROM avis_bodacc WHERE id IN ('A201900701234', 'A202101055555') ORDER BY id`,
    );
    expect(sci.rows).toEqual([
      {
        categorie: 'creation',
        resume:
          "Immatriculation d'une personne morale (B, C, D) suite à création d'un établissement principal ; Société civile immobilière ; capital 1000 EUR ; date d’effet 2019-04-05.",
        sirens: ['912345678'],
        societe_civile: true,
        cle_ban: ADRESSES.liberation3,
      },
      {
        categorie: 'modification',
        resume: 'Modification : administration ; Société civile immobilière.',
        sirens: ['912345678'],
        societe_civile: true,
        cle_ban: ADRESSES.liberation3,
      },
    ]);
    const again = await bodaccSource.run(t.db, file, { sandbox: false, onProgress: () => {} });
    expect(again.details[0]).toBe('avis : 6 (0 ajoutés, 0 modifiés, 6 inchangés)');
  });

  it('refuses a file without the BODACC columns', async () => {
    const file = path.join(dir, 'autre.csv');
    await writeFile(file, 'x;y\n1;2\n');
    await expect(importBodacc(t.db, file)).rejects.toThrow(ImportError);
  });
});

describe('societes_civiles over HTTP', () => {
  beforeAll(async () => {
    const unites = path.join(dir, 'StockUniteLegale.csv');
    const etablissements = path.join(dir, 'StockEtablissement.csv');
    await writeFile(unites, UNITES);
    await writeFile(etablissements, ETABLISSEMENTS);
    await importSirene(t.db, unites);
    const report = await importSirene(t.db, etablissements);
    expect(report.details[1]).toBe('rattachés à un numéro de la BAN : 2 (sur 2 avec numéro et voie)');
  });

  it('serves the civil companies of an address with their notices, never a manager; 3 credits', async () => {
    const before = await debits();
    const res = await get(`/adresses/${ADRESSES.liberation3}/societes-civiles`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      cle_ban: ADRESSES.liberation3,
      adresse: { libelle: '3 Avenue de la Libération 33360 Latresne', code_postal: '33360', insee: '33234' },
      n: 3,
      dernier_dpe_le: '2020-01-15',
      credits: { debites: 3 },
    });
    expect(body.societes.map((s: { denomination: string }) => s.denomination)).toEqual([
      'SCI DES TILLEULS',
      'SCI LE VERGER',
      'SCI ANCIENNE',
    ]);
    const [tilleuls, verger, ancienne] = body.societes;
    expect(tilleuls).toEqual({
      denomination: 'SCI DES TILLEULS',
      siren: '912345678',
      siren_rapproche: false,
      forme: 'Société civile immobilière',
      categorie_juridique: null,
      creee_le: '2019-04-05',
      radiee_le: null,
      avis: [
        {
          id: 'A202101055555',
          date: '2021-06-02',
          famille: 'modification',
          type: 'initial',
          resume: 'Modification : administration ; Société civile immobilière.',
        },
        {
          id: 'A201900701234',
          date: '2019-04-10',
          famille: 'creation',
          type: 'initial',
          resume: expect.stringContaining('capital 1000 EUR'),
        },
      ],
      presente_avant_dernier_dpe: true,
    });
    // Le Verger: SIREN found by name and postal code; in SIRENE since 2021, after the DPE of 2020.
    expect(verger).toMatchObject({
      siren: '923456789',
      siren_rapproche: true,
      forme: 'Société civile immobilière',
      categorie_juridique: '6540',
      creee_le: '2021-03-01',
      radiee_le: null,
      presente_avant_dernier_dpe: false,
    });
    expect(verger.avis.map((a: { famille: string }) => a.famille)).toEqual(['transfert']);
    expect(ancienne).toMatchObject({ siren: '934567890', radiee_le: '2018-04-30', presente_avant_dernier_dpe: false });
    expect(body.qualite).toMatchObject({ provenance: 'mesure', drapeaux: ['rattachement_incertain'], n: 5 });
    expect(JSON.stringify(body)).not.toMatch(/MARTIN|DURAND|LEROY|DUPONT|ROBERT|BOULANGERIE/);
    expect(await nomsDansLaBase(t.db, ['MARTIN', 'DURAND', 'LEROY', 'DUPONT', 'ROBERT'])).toEqual([]);
    expect(await debits()).toBe(before + 3);
  });

  it('answers n = 0 for an address without civil company, and for a street key', async () => {
    const res = await get(`/adresses/${ADRESSES.liberte14}/societes-civiles`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ n: 0, societes: [], dernier_dpe_le: null, qualite: { n: 0 } });
    const voie = (await get(`/adresses/${ADRESSES.rueLiberte}/societes-civiles`)).json();
    expect(voie).toMatchObject({ n: 0, societes: [] });
    expect(voie.limites[0]).toMatch(/numéros/);
  });

  it('answers 404 adresse_introuvable for an unknown address, without debit', async () => {
    const before = await debits();
    const res = await get('/adresses/33234_9999_00001/societes-civiles');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.json().code).toBe('adresse_introuvable');
    expect(await debits()).toBe(before);
  });

  it('refuses a sandbox key (no frozen dataset for this operation)', async () => {
    const k = await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'test' });
    expect(k.status).toBe(201);
    const res = await get(`/adresses/${ADRESSES.liberation3}/societes-civiles`, k.body.cle);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('hors_bac_a_sable');
  });
});
