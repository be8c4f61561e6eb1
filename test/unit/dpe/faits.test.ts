import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { faitsAdresse } from '../../../domain/dpe/faits.ts';
import { importDpe } from '../../../domain/dpe/import.ts';
import { attachBanKeys } from '../../../domain/dvf/import.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';
import { appartementLatresne, csvAdeme } from './fixtures.ts';

const XML_PARIS = path.resolve('../shared/data/dpe/open3cl_xml/2375E4029206L.xml');
const hasXml = existsSync(XML_PARIS);
const SKIP = hasXml ? '' : ' (skipped: ../shared/data/dpe/open3cl_xml absent)';
// The clock of the service: every duration of the answer is counted from this day.
const NOW = new Date('2026-11-21T12:00:00Z');

let t: TestApp;
let dir: string;
let org: { id: string; cle: string };

const CLE = '33234_0160_00012';
const LAT = 44.7812;
const LON = -0.4936;

/** A DVF mutation with what faits_adresse reads; the rest as the importer would write it. */
function mutation(m: {
  id: string;
  date: string;
  insee?: string;
  numero?: number | null;
  codeVoie?: string | null;
  lat: number;
  lon: number;
  valeur: number;
  surface: number;
  type?: string;
}) {
  const prix = Math.round((m.valeur / m.surface) * 100) / 100;
  return [
    m.id,
    m.date,
    Number(m.date.slice(0, 4)),
    m.valeur,
    m.numero ?? null,
    m.codeVoie ?? null,
    m.insee ?? '33234',
    m.lat,
    m.lon,
    `{${m.type ?? 'appartement'}}`,
    m.surface,
    prix,
  ];
}

async function insererMutations(rows: unknown[][]) {
  for (const r of rows) {
    // Written by hand: the vintage's partition first (the importer makes it otherwise).
    const millesime = Number(r[2]);
    await t.db.query(
      `CREATE TABLE IF NOT EXISTS dvf_mutations_live_${millesime} PARTITION OF dvf_mutations
         FOR VALUES FROM ('live', ${millesime}) TO ('live', ${millesime + 1})`,
    );
    await t.db.query(
      `INSERT INTO dvf_mutations (dataset, id_mutation, format, date_mutation, millesime, nature, nature_libelle,
         valeur_fonciere, adresse_numero, code_voie, insee, departement, lat, lon, position_source, parcelles,
         nb_dispositions, nb_lignes, locaux, terrains, nombre_lots, types_locaux, logements, surface_logements, prix_m2,
         vente_en_bloc, avec_dependance, avec_local_pro, prix_atypique, surface_atypique, doublon_probable)
       VALUES ('live', $1, 'etalab', $2, $3, 'vente', 'Vente', $4, $5, $6, $7, left($7, 2), $8, $9, 'dvf', '{}',
         1, 1, '[]', '[]', 0, $10::text[], 1, $11, $12, false, false, false, false, false, false)`,
      r,
    );
  }
  // As the importer ends: the sales attached to the BAN numbers of their communes.
  await attachBanKeys(t.db, 'live', [...new Set(rows.map((r) => String(r[6])))]);
}

beforeAll(async () => {
  t = await createTestApp({ operations: [faitsAdresse], services: { now: () => NOW } });
  dir = await mkdtemp(path.join(tmpdir(), 'dpe-faits-'));
  await t.db.query(
    `INSERT INTO adresses (dataset, cle_ban, type, numero, suffixe, voie, code_voie, code_postal, insee, commune, libelle,
                           lat, lon, type_position, parcelles, source)
     VALUES ('live', $1, 'numero', 12, NULL, 'Route de Bordeaux', '0160', '33360', '33234', 'Latresne',
             '12 Route de Bordeaux 33360 Latresne', $2, $3, 'entrée', '{33234000AB0012}', 'ban'),
            ('live', '67482_1234_00001', 'numero', 1, NULL, 'Place Kléber', '1234', '67000', '67482', 'Strasbourg',
             '1 Place Kléber 67000 Strasbourg', 48.5834, 7.7458, 'entrée', '{}', 'ban')`,
    [CLE, LAT, LON],
  );
  await t.db.query(
    `INSERT INTO communes (dataset, insee, nom, type, departement, region, epci, codes_postaux, population, lat, lon)
     VALUES ('live', '33234', 'Latresne', 'commune-actuelle', '33', '75', '243300316', '{33360}', 3512, 44.78, -0.49)`,
  );
  await t.db.query(
    `INSERT INTO epci (dataset, siren, nom, nature, membres) VALUES ('live', '243300316', 'Bordeaux Métropole', 'METRO', '{33234}')`,
  );
  // Two DPE of the same flat through the real importer: an F, then a G while the F was still valid.
  const csv = path.join(dir, 'dpe.csv');
  await writeFile(
    csv,
    csvAdeme([
      appartementLatresne({
        'N°DPE': '2633E0000001A',
        Date_établissement_DPE: '2026-01-10',
        Etiquette_DPE: 'F',
        Etiquette_GES: 'D',
        'Conso_5_usages_par_m²_é_primaire': 389,
      }),
      appartementLatresne({
        'N°DPE': '2633E0000004D',
        Date_établissement_DPE: '2026-08-01',
        Etiquette_DPE: 'G',
        Etiquette_GES: 'E',
        'Conso_5_usages_par_m²_é_primaire': 455,
        'Emission_GES_5_usages_par_m²': 71,
        Surface_habitable_logement: 45.3,
      }),
      // Strasbourg (Alsace-Moselle, no DVF) and Saint-Denis de La Réunion (another letting calendar), known by DPE.
      appartementLatresne({
        'N°DPE': '2667E0000005E',
        Date_établissement_DPE: '2025-05-05',
        Etiquette_DPE: 'E',
        Identifiant__BAN: '67482_1234_00001',
        'Code_INSEE_(BAN)': '67482',
        Adresse_brute: '1 place Kléber',
        'Coordonnée_cartographique_X_(BAN)': '',
        'Coordonnée_cartographique_Y_(BAN)': '',
      }),
      appartementLatresne({
        'N°DPE': '2697E0000006F',
        Date_établissement_DPE: '2025-02-03',
        Etiquette_DPE: 'G',
        Identifiant__BAN: '97411_0450_00005',
        'Code_INSEE_(BAN)': '97411',
        'Adresse_(BAN)': '5 Rue de Paris 97400 Saint-Denis',
        Adresse_brute: '5 rue de Paris',
        'Coordonnée_cartographique_X_(BAN)': '',
        'Coordonnée_cartographique_Y_(BAN)': '',
      }),
    ]),
  );
  const report = await importDpe(t.db, csv, { aujourdhui: '2026-11-21' });
  expect(report.gardes).toBe(4);
  await insererMutations([
    // At the number, after the G: 250 000 € for 45 m².
    mutation({
      id: '2026-1',
      date: '2026-09-15',
      numero: 12,
      codeVoie: '0160',
      lat: LAT,
      lon: LON,
      valeur: 250000,
      surface: 45,
    }),
    // A neighbour about 50 m north, 2024.
    mutation({
      id: '2024-1',
      date: '2024-05-02',
      numero: 20,
      codeVoie: '0160',
      lat: LAT + 0.00045,
      lon: LON,
      valeur: 240000,
      surface: 60,
    }),
    // 1 km away: in the commune, not in the block.
    mutation({
      id: '2025-1',
      date: '2025-12-01',
      numero: 3,
      codeVoie: '0200',
      lat: LAT + 0.009,
      lon: LON,
      valeur: 300000,
      surface: 100,
      type: 'maison',
    }),
  ]);
  org = await t.organisation({ acces: 'usage' });
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

const get = (url: string) => t.call('GET', url, org.cle);

async function debits(): Promise<number[]> {
  const res = await t.admin('GET', `/organisations/${org.id}/releve?limite=200`);
  return (res.body.mouvements as Array<{ genre: string; operation: string; credits: number }>)
    .filter((m) => m.genre === 'debit' && m.operation === 'faits_adresse')
    .map((m) => Math.abs(m.credits));
}

describe('faits_adresse', () => {
  it('answers 404 adresse_introuvable for a key nobody knows, and debits nothing', async () => {
    const res = await get('/adresses/33234_9999_00001/faits');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 404, code: 'adresse_introuvable' });
    expect(await debits()).toEqual([]);
  });

  it('serves the groups of a BAN number with two DPE, durations counted from the service clock', async () => {
    const res = await get(`/adresses/${CLE}/faits`);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.credits).toEqual({ debites: 5, restants: 495 });
    expect(await debits()).toEqual([5]);

    expect(body.identite).toMatchObject({
      cle_ban: CLE,
      origine: 'ban',
      adresse_numerotee: true,
      adresse: '12 Route de Bordeaux 33360 Latresne',
      numero: 12,
      rep: null,
      insee: '33234',
      parcelles: ['33234000AB0012'],
      lat: LAT,
      lon: LON,
    });
    expect(body.identite.ilot).toMatch(/^l93-100-\d{4}-\d{5}$/);
    expect(body.identite.cell4).toMatch(/^l93-10-\d{5}-\d{6}$/);
    // The 10 m cell lies in the 100 m one.
    const [, , x, y] = body.identite.cell4.split('-');
    expect(body.identite.ilot).toBe(`l93-100-${Math.floor(x / 10)}-${Math.floor(y / 10)}`);

    expect(body.dpe).toMatchObject({
      etiquette: 'G',
      ges: 'E',
      conso_kwh_m2_an: 455,
      ges_kg_m2_an: 71,
      numero: '2633E0000004D',
      etabli_le: '2026-08-01',
      fin_validite: '2036-08-01',
      premier_le: '2026-01-10',
      // 1 August to 21 November.
      jours_depuis: 112,
      nb_total: 2,
      // Since 2025-11-21 both, since 2026-05-21 the G only.
      nb_12_mois: 2,
      nb_6_mois: 1,
      refait_pendant_validite: true,
      historique: [
        { date: '2026-08-01', etiquette: 'G' },
        { date: '2026-01-10', etiquette: 'F' },
      ],
      interdiction_location: '2025-01-01',
      chauffage_energie: 'Électricité',
      isolation_murs: 'insuffisante',
    });
    expect(body.dpe.qualite).toEqual({
      n: 2,
      provenance: 'mesure',
      incertitude: null,
      drapeaux: [],
      methode: expect.any(String),
      donnees_du: '2026-08-01',
      source: 'Observatoire DPE (ADEME)',
    });
    expect(body.batiment).toEqual({
      type: 'immeuble',
      surface_immeuble_m2: 1200,
      periode: '1948-1974',
      annee: 1965,
      niveaux: 5,
      appartements: 40,
    });
    expect(body.audit).toBeNull();

    expect(body.ventes).toMatchObject({
      n: 1,
      premiere_le: '2026-09-15',
      derniere: { date: '2026-09-15', prix: 250000, type: 'appartement', surface_m2: 45, prix_m2: 5555.56 },
      vendu_apres_dpe: true,
      qualite: { n: 1, drapeaux: [], donnees_du: '2026-09-15' },
    });
    // The sale of the number and the neighbour's at 50 m; not the house 1 km away.
    expect(body.ilot).toMatchObject({
      ventes_5a: 2,
      mediane_m2_5a: 4778,
      derniere_vente_le: '2026-09-15',
      anciennete_derniere_vente_j: 67,
      en_vente: null,
      copro: null,
      qualite: { n: 2, drapeaux: ['peu_d_observations'], donnees_du: '2026-09-15' },
    });
    // The 12 months before the commune's newest sale (2026-09-15): 2026-09-15 and 2025-12-01.
    expect(body.commune).toMatchObject({
      insee: '33234',
      nom: 'Latresne',
      epci: '243300316',
      epci_nom: 'Bordeaux Métropole',
      population: 3512,
      ventes_12_mois: 2,
      mediane_m2_12_mois: 4278,
      qualite: { n: 2, donnees_du: '2026-09-15' },
    });
    // No listing in this database: the listing group and the neighbourhood's en_vente are null, and said; nor any
    // pre-market model trained on it: its group is null, and said.
    expect(body.annonce).toBeNull();
    expect(body.pre_marche).toBeNull();
    expect(body.limites).toEqual([
      'annonce, ilot.en_vente, ilot.vente_directe : null, aucune annonce n’est importée dans ces données.',
      'pre_marche : aucun modèle pré-marché calibré sur ces données (npm run modeles).',
    ]);
    expect(res.headers['svc-donnees-du']).toBe('2026-09-15');
  });

  it('serves only the asked columns with champs, and refuses unknown names on champs', async () => {
    const res = await get(`/adresses/${CLE}/faits?champs=dpe.etiquette`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      cle_ban: CLE,
      dpe: { etiquette: 'G' },
      limites: [],
      credits: { debites: 5, restants: 490 },
    });
    const two = (await get(`/adresses/${CLE}/faits?champs=batiment.type, ventes.n,dpe.nb_total`)).json();
    expect(two.batiment).toEqual({ type: 'immeuble' });
    expect(two.ventes).toEqual({ n: 1 });
    expect(two.dpe).toEqual({ nb_total: 2 });
    expect(two.identite).toBeUndefined();

    for (const champs of ['dpe.couleur', 'inconnu', 'copropriete', 'dpe.qualite.n']) {
      const bad = await get(`/adresses/${CLE}/faits?champs=${encodeURIComponent(champs)}`);
      expect(bad.statusCode, champs).toBe(400);
      expect(bad.json()).toMatchObject({
        code: 'parametres_invalides',
        erreurs: [{ champ: 'champs', emplacement: 'requete' }],
      });
    }
    expect((await get(`/adresses/${CLE}/faits?champs=copropriete`)).json().erreurs[0].message).toMatch(/non servi/);
    expect(await debits()).toEqual([5, 5, 5]);
  });

  it('says why sales are absent in Alsace-Moselle, and gives no letting ban overseas', async () => {
    const strasbourg = (await get('/adresses/67482_1234_00001/faits')).json();
    expect(strasbourg.dpe).toMatchObject({ etiquette: 'E', interdiction_location: '2034-01-01' });
    expect(strasbourg.ventes).toBeNull();
    expect(strasbourg.ilot).toBeNull();
    expect(strasbourg.limites[0]).toMatch(/Alsace-Moselle/);

    // Known by its DPE only: no BAN row, the identity the observatory geocoded.
    const reunion = (await get('/adresses/97411_0450_00005/faits')).json();
    expect(reunion.identite).toMatchObject({
      origine: 'dpe',
      numero: 5,
      insee: '97411',
      adresse: '5 Rue de Paris 97400 Saint-Denis',
      parcelles: null,
      lat: null,
      ilot: null,
    });
    expect(reunion.dpe).toMatchObject({ etiquette: 'G', interdiction_location: null });
  });

  it.skipIf(!hasXml)(`serves a real observatory DPE at an address known by it only${SKIP}`, async () => {
    await importDpe(t.db, XML_PARIS, { aujourdhui: '2026-11-21' });
    const res = await get('/adresses/75111_3514_00203/faits');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.identite).toMatchObject({
      origine: 'dpe',
      adresse: '203 Rue du Faubourg Saint-Antoine 75011 Paris',
      numero: 203,
      insee: '75111',
      ilot: 'l93-100-6546-68613',
    });
    expect(body.dpe).toMatchObject({
      etiquette: 'G',
      ges: 'C',
      etabli_le: '2023-11-24',
      jours_depuis: 1093,
      nb_12_mois: 0,
      refait_pendant_validite: false,
      interdiction_location: '2025-01-01',
      qualite: { n: 1, drapeaux: [] },
    });
    // 19 flats; the building area the software repeated from the flat (21.9 m²) is not served.
    expect(body.batiment).toMatchObject({ type: 'immeuble', appartements: 19, surface_immeuble_m2: null });
    expect(body.ventes).toBeNull();
    expect(body.limites).toContain('ventes, ilot : Aucune vente DVF n’est chargée pour la commune 75111.');
  });
});
