import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NON_DIFFUSE, reconstruireAgences } from '../../domain/agences/derive.ts';
import { importAnnonces } from '../../domain/annonces/import.ts';
import { importBodacc } from '../../domain/entreprises/import-bodacc.ts';
import { importSirene } from '../../domain/entreprises/import-sirene.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { appartement, fichierReleves } from '../unit/annonces/support.ts';

// agences and agences_commune as a client calls them: on the sandbox (pk_test_ key: the agencies of Latresne and
// their activity), on a crafted market of Abzac whose shares and concentration are computed by hand below, and on the
// real SIRENE and BODACC samples of ../shared/data (a real sole trader made an agency keeps no name and no address;
// a real company's notices reach its sheet by its SIREN).

const SHARED = path.resolve(import.meta.dirname, '../../../shared/data');
const SIRENE_UL = path.join(SHARED, 'sirene/sample_unites_legales_OK.csv');
const SIRENE_ETAB = path.join(SHARED, 'sirene/sample_etablissements_OK.csv');
const BODACC_XML = path.join(SHARED, 'bodacc/RCS-A_BXA20200072.xml');
const hasShared = [SIRENE_UL, SIRENE_ETAB, BODACC_XML].every((f) => existsSync(f));
const SKIP = hasShared ? '' : ' (skipped: ../shared/data/sirene and bodacc are absent)';

let t: TestApp;
let live: string;
let test: string;
let dir: string;

const get = (url: string, cle = live) => t.call('GET', url, cle);

// The crafted market of Abzac (33001), March 2025. A: a company whose APE is not real estate but whose listings name
// it (3 properties, 2 exclusive, one reduced); B: an agency of SIRENE (1, exclusive); C: a professional SIRENE does not
// know (1); D: a sole trader under partial diffusion (1), whose listings carry a name and a personal-looking e-mail.
const A = '552100554';
const B = '428765432';
const D = '812345670';

const UL = [
  'siren,statutDiffusionUniteLegale,dateCreationUniteLegale,etatAdministratifUniteLegale,dateDebut,dateDernierTraitementUniteLegale,nomUniteLegale,prenom1UniteLegale,denominationUniteLegale,sigleUniteLegale,categorieJuridiqueUniteLegale,activitePrincipaleUniteLegale,trancheEffectifsUniteLegale,nicSiegeUniteLegale',
  `${A},O,2010-01-01,A,2010-01-01,2024-01-01T00:00:00,,,AGENCE DU CANAL HOLDING,,5710,70.22Z,11,00011`,
  `${B},O,2012-05-01,A,2012-05-01,2024-01-01T00:00:00,,,AGENCE DU PORT,ADP,5499,68.31Z,02,00015`,
  `${D},P,2019-03-01,A,2019-03-01,2024-01-01T00:00:00,MARTIN,JEAN,,,1000,68.31Z,NN,00012`,
].join('\n');
const ETAB = [
  'siren,nic,siret,statutDiffusionEtablissement,dateCreationEtablissement,dateDernierTraitementEtablissement,etablissementSiege,etatAdministratifEtablissement,dateDebut,numeroVoieEtablissement,typeVoieEtablissement,libelleVoieEtablissement,codePostalEtablissement,libelleCommuneEtablissement,codeCommuneEtablissement,activitePrincipaleEtablissement,enseigne1Etablissement',
  `${B},00015,${B}00015,O,2012-05-01,2024-01-01T00:00:00,true,A,2012-05-01,12,RUE,DU PORT,33230,ABZAC,33001,68.31Z,ADP IMMOBILIER`,
  `${D},00012,${D}00012,P,2019-03-01,2024-01-01T00:00:00,true,A,2019-03-01,4,IMP,DES MARTINETS,33230,ABZAC,33001,68.31Z,`,
].join('\n');

const ici = { insee: '33001', code_postal: '33230', position: { lat: 45.0135, lon: -0.1262 }, precision: 'approchee' };
const releve = (id: string, vu: string, surface: number, extra: Record<string, unknown>) =>
  appartement({ ...ici, id, vu_le: `${vu}T09:00:00Z`, surface, pieces: Math.round(surface / 20), ...extra });
const parA = {
  annonceur: {
    nom: 'AGENCE DU CANAL',
    siren: A,
    mandat: 'exclusif',
    telephone: '05 57 00 00 01',
    email: 'contact@agenceducanal.fr',
  },
};
const RELEVES = [
  releve('2001', '2025-03-01', 41, { ...parA, prix: 200_000, premiere_parution: '2025-03-01' }),
  releve('2002', '2025-03-05', 55, { ...parA, prix: 230_000, premiere_parution: '2025-03-05' }),
  releve('2003', '2025-03-11', 71, {
    annonceur: { ...parA.annonceur, mandat: 'simple' },
    prix: 260_000,
    premiere_parution: '2025-03-11',
  }),
  releve('2004', '2025-03-02', 88, {
    annonceur: { nom: 'AGENCE DU PORT', siren: B, mandat: 'exclusif', telephone: '05 57 00 00 02' },
    prix: 300_000,
    premiere_parution: '2025-03-02',
  }),
  releve('2005', '2025-03-03', 102, {
    annonceur: { nom: 'CABINET DES VIGNES', telephone: '05 57 00 00 03' },
    prix: 320_000,
    premiere_parution: '2025-03-03',
  }),
  releve('2006', '2025-03-04', 120, {
    annonceur: { nom: 'JEAN MARTIN IMMOBILIER', siren: D, telephone: '06 11 22 33 44', email: 'jean.martin@gmail.com' },
    prix: 350_000,
    premiere_parution: '2025-03-04',
  }),
  releve('2007', '2025-03-06', 64, {
    type_vendeur: 'particulier',
    annonceur: undefined,
    prix: 180_000,
    premiere_parution: '2025-03-06',
  }),
  // A's first property reduced on the 20th: the latest snapshot of the data.
  releve('2001', '2025-03-20', 41, { ...parA, prix: 190_000, premiere_parution: '2025-03-01' }),
];

beforeAll(async () => {
  t = await createTestApp();
  dir = await mkdtemp(path.join(tmpdir(), 'agences-'));
  await loadSandbox(t.db, { dataset: 'sandbox' });
  live = (await t.organisation({ acces: 'usage' })).cle;
  const org = await t.organisation({ acces: 'usage' });
  test = (await t.admin('POST', `/organisations/${org.id}/cles`, { mode: 'test' })).body.cle;

  const ul = path.join(dir, 'StockUniteLegale.csv');
  const etab = path.join(dir, 'StockEtablissement.csv');
  await writeFile(ul, UL);
  await writeFile(etab, ETAB);
  expect((await importSirene(t.db, ul)).rejetes).toEqual([]);
  expect((await importSirene(t.db, etab)).rejetes).toEqual([]);
  const r = await importAnnonces(t.db, await fichierReleves(dir, 'releves.jsonl', RELEVES), {
    maintenant: new Date('2025-04-01T00:00:00Z'),
  });
  expect(r.rejetes).toEqual([]);
  await reconstruireAgences(t.db, 'live');
}, 300_000);

afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('agences_commune: a market computed by hand', () => {
  it('serves the month with each agency’s mandates, shares, the leader’s share and the HHI', async () => {
    const res = await get('/communes/33001/agences');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(res.headers['svc-credits-debites']).toBe('3');
    expect(body.par_mois).toHaveLength(1);
    const mars = body.par_mois[0];
    // 6 mandates (the private seller is no agency): A 3/6, B, C, D 1/6 each.
    expect(mars).toMatchObject({ mois: '2025-03', n_agences: 4, mandats_total: 6, part_leader_pct: 50 });
    // HHI = 0.5² + 3 × (1/6)² = 0.25 + 0.0833 = 0.3333.
    expect(mars.hhi).toBe(0.3333);
    expect(mars.qualite.drapeaux).toEqual(['peu_d_observations']);
    expect(mars.agences[0]).toEqual({
      enseigne: 'AGENCE DU CANAL',
      siren: A,
      mandats: 3,
      exclusifs: 2,
      part_exclusifs_pct: 66.7,
      part_marche_pct: 50,
      // Days online to the latest snapshot (20 March): 19, 15 and 9.
      duree_mediane_j: 15,
      part_baisses_pct: 33.3,
    });
    const autres = mars.agences.slice(1);
    expect(autres.map((a: any) => a.part_marche_pct)).toEqual([16.7, 16.7, 16.7]);
    expect(autres.find((a: any) => a.siren === B)).toMatchObject({
      enseigne: 'AGENCE DU PORT',
      exclusifs: 1,
      duree_mediane_j: 18,
    });
    expect(autres.find((a: any) => a.siren === null)).toMatchObject({ enseigne: 'CABINET DES VIGNES', mandats: 1 });
    // The sole trader under partial diffusion: by SIREN, never by the name their listings carry.
    expect(autres.find((a: any) => a.siren === D)).toMatchObject({ enseigne: NON_DIFFUSE, mandats: 1 });
    expect(res.body).not.toMatch(/MARTIN/i);
  });

  it('serves months since `depuis`, newest first, a quiet month empty and said; no agency: 404 without debit', async () => {
    const res = await get('/communes/33001/agences?depuis=2025-01');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.par_mois.map((m: any) => [m.mois, m.n_agences, m.hhi])).toEqual([
      ['2025-03', 4, 0.3333],
      ['2025-02', 0, null],
      ['2025-01', 0, null],
    ]);
    expect(body.limites.join(' ')).toMatch(/2025-02, 2025-01/);
    const vide = await get('/communes/33001/agences?mois=2024-12');
    expect(vide.statusCode).toBe(404);
    expect(vide.json().code).toBe('ressource_absente');
    expect(vide.headers['svc-credits-debites']).toBeUndefined();
    const deux = await get('/communes/33001/agences?mois=2025-03&depuis=2025-01');
    expect([deux.statusCode, deux.json().code]).toEqual([400, 'parametres_invalides']);
  });
});

describe('agences: sheets, places, brands, cursors', () => {
  it('lists the agencies of a commune by ascending SIREN, 2 credits each, page by page with a signed cursor', async () => {
    const p1 = await get('/agences?insee=33001&limite=2');
    expect(p1.statusCode, p1.body).toBe(200);
    expect(p1.json().donnees.map((a: any) => a.siren)).toEqual([B, A]);
    expect(p1.headers['svc-credits-debites']).toBe('4');
    const curseur = p1.json().curseur_suivant as string;
    const p2 = await get(`/agences?insee=33001&limite=2&curseur=${encodeURIComponent(curseur)}`);
    expect(p2.json().donnees.map((a: any) => a.siren)).toEqual([D]);
    expect(p2.json().curseur_suivant).toBeNull();
    expect(p2.headers['svc-credits-debites']).toBe('2');
    // Altered, or issued for other filters: refused on the field.
    const altere = await get(
      `/agences?insee=33001&limite=2&curseur=${encodeURIComponent(`${curseur.slice(0, -2)}xx`)}`,
    );
    expect([altere.statusCode, altere.json().erreurs?.[0]?.champ]).toEqual([400, 'curseur']);
    const ailleurs = await get(`/agences?cp=33230&limite=2&curseur=${encodeURIComponent(curseur)}`);
    expect(ailleurs.statusCode).toBe(400);
  });

  it('serves a sheet with its establishments, brands, domains, published contacts and activity', async () => {
    const res = await get(`/agences/${A}`);
    expect(res.statusCode, res.body).toBe(200);
    const a = res.json().donnees[0];
    expect(a).toMatchObject({
      siren: A,
      denomination: 'AGENCE DU CANAL HOLDING',
      enseigne: 'AGENCE DU CANAL',
      ape: '70.22Z',
      entrepreneur_individuel: false,
      contacts_pro: {
        telephone: '05 57 00 00 01',
        email: 'contact@agenceducanal.fr',
        origine: 'published',
        retirees: false,
      },
      domaines: [{ domaine: 'agenceducanal.fr', genre: 'propre', observations: 3 }],
    });
    expect(a.reseaux).toEqual([
      expect.objectContaining({
        enseigne: 'AGENCE DU CANAL',
        nb_annonces: 3,
        rapprochement: 'siren_annonce',
        commune_principale: 'Abzac',
      }),
    ]);
    expect(a.activite).toMatchObject({
      mois: '2025-03',
      mandats: 3,
      exclusifs: 2,
      annonces_actives: 3,
      communes: [{ insee: '33001', mandats: 3, duree_mediane_j: 15, part_baisses_pct: 33.3 }],
    });
    const b = (await get(`/agences/${B}`)).json().donnees[0];
    expect(b.etablissements).toEqual([
      expect.objectContaining({
        siret: `${B}00015`,
        siege: true,
        adresse: '12 RUE DU PORT',
        insee: '33001',
        tranche_effectif: '02',
        actif: true,
      }),
    ]);
  });

  it('finds agencies by brand and network, case and accents aside', async () => {
    const enseigne = await get('/agences?enseigne=Adp%20Immo');
    expect(enseigne.json().donnees.map((a: any) => a.siren)).toEqual([B]);
    const reseau = await get('/agences?reseau=du%20CANAL');
    expect(reseau.json().donnees.map((a: any) => a.siren)).toEqual([A]);
    // A sole trader is never found by the name their listings carry.
    expect((await get('/agences?enseigne=martin')).statusCode).toBe(404);
  });

  it('serves a sole trader under partial diffusion without name, address, brand or contact', async () => {
    const res = await get(`/agences/${D}`);
    expect(res.statusCode, res.body).toBe(200);
    const d = res.json().donnees[0];
    expect(d).toMatchObject({
      entrepreneur_individuel: true,
      diffusion_partielle: true,
      denomination: null,
      enseigne: null,
    });
    expect(d.etablissements[0]).toMatchObject({ adresse: null, code_postal: '33230', insee: '33001' });
    expect(d.contacts_pro).toEqual({ telephone: null, email: null, site: null, origine: null, retirees: true });
    expect(d.domaines).toEqual([]);
    expect(d.reseaux[0]).toMatchObject({ enseigne: null, nom_commercial: null, nb_annonces: 1 });
    expect(res.body).not.toMatch(/MARTIN|JEAN|06 11 22|gmail/i);
    // Nor kept in the agencies' tables.
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM (SELECT a::text AS x FROM agences a UNION ALL SELECT v::text FROM agences_activite v) s
        WHERE x ILIKE '%martin%'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('answers 404 ressource_absente without debit when no agency matches, 400 without any filter', async () => {
    for (const url of ['/agences?insee=33234', '/agences/999999999', '/agences?departement=2A']) {
      const res = await get(url);
      expect([res.statusCode, res.json().code], url).toEqual([404, 'ressource_absente']);
      expect(res.headers['svc-credits-debites'], url).toBeUndefined();
    }
    const rien = await get('/agences');
    expect([rien.statusCode, rien.json().code]).toEqual([400, 'parametres_invalides']);
  });
});

describe('the sandbox', () => {
  it('lists the agencies of Latresne with their activity (pk_test_ key, no debit)', async () => {
    const res = await get('/agences?insee=33234', test);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['svc-credits-debites']).toBe('0');
    const donnees = res.json().donnees as any[];
    // Fictitious agencies of SIRENE (68.31Z), some with listings of Latresne: mandates, brands, listings online.
    expect(donnees.every((a) => a.denomination === null || a.denomination.endsWith('(FICTIVE)'))).toBe(true);
    const actives = donnees.filter((a) => a.activite?.mandats > 0);
    expect(actives.length, res.body.slice(0, 500)).toBeGreaterThanOrEqual(2);
    const agence = actives[0];
    expect(agence.ape).toBe('68.31Z');
    expect(agence.activite.communes.map((c: any) => c.insee)).toContain('33234');
    expect(agence.activite.annonces_actives).toBeGreaterThan(0);
    expect(agence.reseaux[0]).toMatchObject({
      rapprochement: 'sirene_nom_code_postal',
      commune_principale: 'Latresne',
    });
    // Its filing of accounts, from the sandbox's BODACC C bulletin in the DILA's source format.
    expect(agence.avis_bodacc).toEqual([
      expect.objectContaining({
        famille: 'dpc',
        categorie: 'depot_comptes',
        sirens: [agence.siren],
        date: '2025-07-16',
      }),
    ]);
    // Its sole traders of real estate are served without address.
    for (const a of donnees.filter((x) => x.entrepreneur_individuel)) {
      expect(a.denomination).toBeNull();
      for (const e of a.etablissements) expect(e.adresse).toBeNull();
    }
    const marche = await get('/communes/33234/agences', test);
    expect(marche.statusCode, marche.body).toBe(200);
    const mois = marche.json().par_mois[0];
    expect(mois.agences.map((a: any) => a.siren)).toContain(agence.siren);
    const parts = mois.agences.reduce((s: number, a: any) => s + a.part_marche_pct, 0);
    expect(Math.abs(parts - 100)).toBeLessThan(0.5);
    const hhi = mois.agences.reduce((s: number, a: any) => s + (a.mandats / mois.mandats_total) ** 2, 0);
    expect(mois.hhi).toBeCloseTo(hhi, 3);
    // Outside the frozen set: refused.
    expect((await get('/agences?insee=13201', test)).statusCode).toBe(403);
  });
});

describe(`the real SIRENE and BODACC samples${SKIP}`, () => {
  it('makes no agency of units of other activities, and a real sole trader made an agency keeps no name', async () => {
    if (!hasShared) return;
    await importSirene(t.db, SIRENE_UL, { dataset: 'sandbox' });
    await importSirene(t.db, SIRENE_ETAB, { dataset: 'sandbox' });
    await reconstruireAgences(t.db, 'sandbox');
    const reels = ['000325175', '001807254', '005410220', '005880034', '006003560', '006004659'];
    const { rows } = await t.db.query(`SELECT siren FROM agences WHERE siren = ANY($1::text[])`, [reels]);
    expect(rows).toEqual([]);

    // The real row of a sole trader (legal category 1000, named in the file), as an agency under partial diffusion.
    const [entete, ...lignes] = (await readFile(SIRENE_UL, 'utf8')).trim().split('\n');
    const colonnes = entete!.split(',');
    const ligne = lignes.find((l) => l.startsWith('000325175,'))!.split(',');
    ligne[colonnes.indexOf('activitePrincipaleUniteLegale')] = '68.31Z';
    ligne[colonnes.indexOf('statutDiffusionUniteLegale')] = 'P';
    const variante = path.join(dir, 'ul-reelle.csv');
    await writeFile(variante, `${entete}\n${ligne.join(',')}\n`);
    await importSirene(t.db, variante, { dataset: 'sandbox' });
    await reconstruireAgences(t.db, 'sandbox');
    const res = await get('/agences/000325175', test);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().donnees[0]).toMatchObject({
      entrepreneur_individuel: true,
      diffusion_partielle: true,
      denomination: null,
    });
    expect(res.body).not.toMatch(/JANOYER|THIERRY/i);
  });

  it('brings a company’s notices of a real bulletin to its sheet by its SIREN, without a manager’s name', async () => {
    if (!hasShared) return;
    await importBodacc(t.db, BODACC_XML);
    // SAJJ (882 720 899 in the bulletin): « exploitation d'une agence immobilière ».
    const ul = path.join(dir, 'ul-sajj.csv');
    await writeFile(
      ul,
      `siren,statutDiffusionUniteLegale,dateCreationUniteLegale,etatAdministratifUniteLegale,dateDebut,denominationUniteLegale,categorieJuridiqueUniteLegale,activitePrincipaleUniteLegale\n882720899,O,2020-03-20,A,2020-03-20,SAJJ,5499,68.31Z\n`,
    );
    await importSirene(t.db, ul);
    await reconstruireAgences(t.db, 'live');
    const res = await get('/agences/882720899');
    expect(res.statusCode, res.body).toBe(200);
    const avis = res.json().donnees[0].avis_bodacc;
    expect(avis).toEqual([
      expect.objectContaining({
        id: 'A20200072139',
        date: '2020-04-10',
        famille: 'creation',
        sirens: ['882720899'],
        denomination: 'SAJJ',
        porte_sur_personne_physique: false,
      }),
    ]);
    expect(avis[0].contenu).not.toMatch(/Gérant|Président/);
  });
});
