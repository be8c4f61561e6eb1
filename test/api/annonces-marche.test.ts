import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAnnonces } from '../../domain/annonces/import.ts';
import { SCOPES } from '../../domain/catalogue.ts';
import { loadSandbox } from '../../domain/sandbox/load.ts';
import { createTestApp, type TestApp } from '../support/app.ts';
import { annonceDuPortail, fichierReleves } from '../unit/annonces/support.ts';

// What waited for listings: secteur's private sellers and its « ni en vente », estimer_bien's listings online, drops
// and withdrawals, faits_adresse's listing group and the neighbourhood's en_vente. The demonstration territory gives
// the BAN, the sales and the DPE; its listings are removed and a crafted set is imported through the real importer,
// so that every count and median below is known by hand. First, with no listing at all: null, and said.

const MAINTENANT = new Date('2025-11-01T00:00:00Z');
/** The latest snapshot of the crafted set: the windows of drops and withdrawals (90 days) end there. */
const DERNIER = '2025-10-30T08:00:00Z';
const JOUR_MS = 86_400_000;

let t: TestApp;
let dir: string;
/** A key without lien_origine (the default), and one with every scope. */
let cle: string;
let cleLien: string;
/** BAN numbers of Paris 11e, each alone at its position. */
let numeros: Array<{ cle_ban: string; lat: number; lon: number }>;
/** A number of Lille that secteur counts in its pre-market (recent DPE, no sale since). */
let preMarche: { cle_ban: string; lat: number; lon: number };
/** secteur's pre-market of 59000 before any listing. */
let avantPreMarche: number;

const get = (url: string, key = cle) => t.call('GET', url, key);
const estimer = (body: object, key = cle) => t.call('POST', '/estimations', key, body);

beforeAll(async () => {
  t = await createTestApp();
  await loadSandbox(t.db, { dataset: 'live' });
  // The demonstration's listings out: the crafted set alone is read.
  await t.db.query(`DELETE FROM annonces_evenements WHERE dataset = 'live'`);
  await t.db.query(`DELETE FROM annonces WHERE dataset = 'live'`);
  cle = (await t.organisation({ acces: 'data' })).cle;
  cleLien = (await t.organisation({ acces: 'data', portees: [...SCOPES] })).cle;
  dir = await mkdtemp(path.join(tmpdir(), 'annonces-marche-'));
  numeros = (
    await t.db.query<{ cle_ban: string; lat: number; lon: number }>(
      `SELECT a.cle_ban, a.lat, a.lon FROM adresses a
        WHERE a.dataset = 'live' AND a.insee = '75111' AND a.type = 'numero'
          AND NOT EXISTS (SELECT 1 FROM adresses b WHERE b.dataset = 'live' AND b.type = 'numero'
                           AND b.cle_ban <> a.cle_ban
                           AND earth_distance(ll_to_earth(a.lat, a.lon), ll_to_earth(b.lat, b.lon)) < 1)
        ORDER BY a.cle_ban LIMIT 12`,
    )
  ).rows;
  expect(numeros.length).toBe(12);
  // Like the rebuild: the latest individual DPE of the 90 days before the newest DPE, at 59000, no sale since.
  const { rows } = await t.db.query<{ cle_ban: string; lat: number; lon: number }>(
    `WITH reference AS (SELECT max(etabli_le) AS le FROM dpe WHERE dataset = 'live'),
     recents AS (
       SELECT DISTINCT ON (d.cle_ban) d.cle_ban, d.code_postal, d.etabli_le
         FROM dpe d, reference r
        WHERE d.dataset = 'live' AND d.cle_ban IS NOT NULL AND d.type_batiment IN ('maison', 'appartement')
          AND d.etabli_le > r.le - 90
        ORDER BY d.cle_ban, d.etabli_le DESC, d.numero_dpe DESC)
     SELECT x.cle_ban, a.lat, a.lon FROM recents x
       JOIN adresses a ON a.dataset = 'live' AND a.cle_ban = x.cle_ban AND a.type = 'numero'
      WHERE x.code_postal = '59000'
        AND NOT EXISTS (SELECT 1 FROM dvf_mutations m WHERE m.dataset = 'live' AND m.cle_ban = x.cle_ban
                         AND m.date_mutation >= x.etabli_le)
        AND NOT EXISTS (SELECT 1 FROM adresses b WHERE b.dataset = 'live' AND b.type = 'numero'
                         AND b.cle_ban <> a.cle_ban
                         AND earth_distance(ll_to_earth(a.lat, a.lon), ll_to_earth(b.lat, b.lon)) < 1)
      ORDER BY x.cle_ban LIMIT 1`,
  );
  expect(rows.length).toBe(1);
  preMarche = rows[0];
}, 300_000);

afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

/** A flat of Paris 11e at a BAN number, as portal_a writes it. */
function appart(portail: string, id: string, n: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    portail,
    id,
    lien: `https://www.${portail.replace('_', '-')}.example/annonces/${id}`,
    statut: 'actif',
    type: 'appartement',
    pieces: 2,
    etage: 2,
    code_postal: '75011',
    insee: '75111',
    position: { lat: numeros[n].lat, lon: numeros[n].lon },
    precision: 'adresse',
    type_vendeur: 'pro',
    annonceur: { nom: 'AGENCE DU CANAL', siren: '552100554', mandat: 'simple' },
    titre: 'Appartement',
    description: 'Deux pièces.',
    ...extra,
  };
}

/** Its life: the snapshots of a listing, one per [time, fields]. */
const vie = (base: Record<string, unknown>, etats: Array<[string, Record<string, unknown>]>) =>
  etats.map(([vu, champs]) => ({ ...base, vu_le: vu, ...champs }));

/**
 * The crafted set. Comparable to a flat of 45 m² of Paris 11e (31.5-58.5 m², plausible €/m²), by property:
 * - P1 40 m² 400 000 € online on portal_a and on portal_b (one property, at its main listing's 10 000 €/m²);
 * - P2 50 m², 480 000 → 460 000 (2025-09-15) → 450 000 € (2025-10-10): two drops in the window, 6.25 %, 9 000 €/m²;
 * - P3 36 m², 420 000 → 396 000 € (2025-06-15): a drop before the window, 11 000 €/m² online;
 * - P4 55 m², a private seller, 462 000 → 440 000 € (2025-09-01): 4.76 %, 8 000 €/m²; online since 2025-05-10;
 * - P5 42 m² 420 000 €, withdrawn 2025-09-20 (in the window): 10 000 €/m²; at P1's number;
 * - P6 44 m² withdrawn 2025-06-01 (before the window): neither followed nor withdrawn;
 * - P7 48 m² on portal_a (withdrawn 2025-09-25) and on portal_c at 485 000 € (online): still on sale, no withdrawal;
 * - not comparable: a flat of 100 m², a house of 45 m², a flat of 45 m² at 5 000 € (implausible).
 * Private sellers of 75011: P4 (173 days online), P8 70 m² on two portals since 2025-10-01 (29 days); beside them a
 * withdrawn private listing and a seller the portal does not qualify (inconnu), neither counted. In 75012 one private
 * listing of 10 days. In Lille, a listing online at a pre-market address.
 */
function releves(): object[] {
  const p1a = appart('portal_a', '5101', 0, { surface: 40, prix: 400_000, premiere_parution: '2025-08-15' });
  const p1b = appart('portal_b', 'b5101', 0, { surface: 40, prix: 404_000 });
  const p2 = appart('portal_a', '5102', 1, { surface: 50, premiere_parution: '2025-06-01' });
  const p3 = appart('portal_a', '5103', 2, { surface: 36, premiere_parution: '2025-05-01' });
  const p4 = appart('portal_a', '5104', 3, {
    surface: 55,
    premiere_parution: '2025-05-10',
    type_vendeur: 'particulier',
    annonceur: undefined,
    titre: 'Particulier vend T2, appelez le 06 12 34 56 78',
    description: 'Contact : Mme Lefèvre, jeanne.lefevre@exemple.fr, 06.12.34.56.78.',
  });
  const p5 = appart('portal_a', '5105', 0, { surface: 42, prix: 420_000, pieces: 3, premiere_parution: '2025-07-01' });
  const p6 = appart('portal_a', '5106', 4, { surface: 44, prix: 440_000, premiere_parution: '2025-04-01' });
  const p7a = appart('portal_a', '5107', 5, { surface: 48, prix: 480_000, premiere_parution: '2025-07-10' });
  const p7c = appart('portal_c', '5107', 5, { surface: 48, prix: 485_000 });
  const p8a = appart('portal_a', '5108', 6, {
    surface: 70,
    prix: 600_000,
    premiere_parution: '2025-10-01',
    type_vendeur: 'particulier',
    annonceur: undefined,
  });
  const p8b = appart('portal_b', 'b5108', 6, {
    surface: 70,
    prix: 606_000,
    type_vendeur: 'particulier',
    annonceur: undefined,
  });
  const retireePrivee = appart('portal_a', '5109', 7, {
    surface: 30,
    prix: 300_000,
    type_vendeur: 'particulier',
    annonceur: undefined,
  });
  const inconnu = appart('portal_a', '5110', 8, {
    surface: 25,
    prix: 250_000,
    type_vendeur: undefined,
    annonceur: undefined,
  });
  const grand = appart('portal_a', '5111', 9, { surface: 100, prix: 1_000_000 });
  const maison = appart('portal_a', '5112', 10, { type: 'maison', surface: 45, prix: 450_000, etage: undefined });
  const absurde = appart('portal_a', '5113', 11, { surface: 45, prix: 5_000 });
  const douzieme = {
    ...appart('portal_a', '5114', 0, { surface: 60, prix: 600_000, type_vendeur: 'particulier', annonceur: undefined }),
    code_postal: '75012',
    insee: '75112',
    position: { lat: 48.8402, lon: 2.3876 },
    precision: 'approchee',
    premiere_parution: '2025-10-20',
  };
  const lille = {
    ...appart('portal_a', '5115', 0, { surface: 65, prix: 230_000 }),
    code_postal: '59000',
    insee: '59350',
    position: { lat: preMarche.lat, lon: preMarche.lon },
  };
  return [
    ...vie(p1a, [
      ['2025-08-15T08:00:00Z', {}],
      [DERNIER, {}],
    ]),
    ...vie(p1b, [
      ['2025-08-20T08:00:00Z', {}],
      [DERNIER, {}],
    ]),
    ...vie(p2, [
      ['2025-06-01T08:00:00Z', { prix: 480_000 }],
      ['2025-09-15T08:00:00Z', { prix: 460_000 }],
      ['2025-10-10T08:00:00Z', { prix: 450_000 }],
      [DERNIER, { prix: 450_000 }],
    ]),
    ...vie(p3, [
      ['2025-05-01T08:00:00Z', { prix: 420_000 }],
      ['2025-06-15T08:00:00Z', { prix: 396_000 }],
      [DERNIER, { prix: 396_000 }],
    ]),
    ...vie(p4, [
      ['2025-05-10T08:00:00Z', { prix: 462_000 }],
      ['2025-09-01T08:00:00Z', { prix: 440_000 }],
      [DERNIER, { prix: 440_000 }],
    ]),
    ...vie(p5, [
      ['2025-07-01T08:00:00Z', {}],
      ['2025-09-20T08:00:00Z', { statut: 'withdrawn' }],
    ]),
    ...vie(p6, [
      ['2025-04-01T08:00:00Z', {}],
      ['2025-06-01T08:00:00Z', { statut: 'withdrawn' }],
    ]),
    ...vie(p7a, [
      ['2025-07-10T08:00:00Z', {}],
      ['2025-09-25T08:00:00Z', { statut: 'withdrawn' }],
    ]),
    ...vie(p7c, [
      ['2025-07-12T08:00:00Z', {}],
      [DERNIER, {}],
    ]),
    ...vie(p8a, [
      ['2025-10-01T08:00:00Z', {}],
      [DERNIER, {}],
    ]),
    ...vie(p8b, [
      ['2025-10-02T08:00:00Z', {}],
      [DERNIER, {}],
    ]),
    ...vie(retireePrivee, [
      ['2025-05-01T08:00:00Z', {}],
      ['2025-10-01T08:00:00Z', { statut: 'withdrawn' }],
    ]),
    ...vie(inconnu, [
      ['2025-05-01T08:00:00Z', {}],
      [DERNIER, {}],
    ]),
    ...vie(grand, [[DERNIER, {}]]),
    ...vie(maison, [[DERNIER, {}]]),
    ...vie(absurde, [[DERNIER, {}]]),
    ...vie(douzieme, [[DERNIER, {}]]),
    ...vie(lille, [[DERNIER, {}]]),
  ].sort((a, b) => String(a.vu_le).localeCompare(String(b.vu_le)));
}

const mediane = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const k = s.length >> 1;
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
};
/** Days online as the service counts them: from the first publication to the latest snapshot. */
const jours = (parution: string) => Math.floor((Date.parse(DERNIER) - Date.parse(`${parution}T00:00:00Z`)) / JOUR_MS);

describe('with no listing imported', () => {
  it('serves the listing figures null and says why, in secteur, estimer_bien and faits_adresse', async () => {
    const est = await estimer({ type: 'appartement', surface: 44, insee: '75111' });
    expect(est.statusCode, est.body).toBe(200);
    const e = est.json();
    expect([e.annonces_en_vente, e.baisses, e.retraits]).toEqual([null, null, null]);
    expect(e.limites.join(' ')).toMatch(/annonces_en_vente, baisses, retraits : null, aucune annonce n’est importée/);

    // (Each input below is asked once before the import, never after: the service keeps an answer asked twice.)
    const sec = (await get('/codes-postaux/59000/secteur')).json();
    avantPreMarche = sec.pre_marche_pur.n;
    expect(avantPreMarche).toBeGreaterThan(0);
    expect(sec.particuliers).toBeNull();
    expect(sec.limites.join(' ')).toMatch(/particuliers : null, aucune annonce n’est importée/);
    expect(sec.limites.join(' ')).toMatch(/« Ni en vente » n’est pas vérifié/);

    const faits = (await get(`/adresses/${numeros[0].cle_ban}/faits`)).json();
    expect(faits.annonce).toBeNull();
    expect(faits.ilot.en_vente).toBeNull();
    expect(faits.limites.join(' ')).toMatch(/annonce, ilot\.en_vente, ilot\.vente_directe : null, aucune annonce/);
  });
});

describe('with the crafted listings', () => {
  beforeAll(async () => {
    const report = await importAnnonces(t.db, await fichierReleves(dir, 'releves.jsonl', releves()), {
      dataset: 'live',
      maintenant: MAINTENANT,
    });
    expect(report.rejetes).toEqual([]);
  }, 120_000);

  it('imports the duplicates as one property each', async () => {
    for (const [a, b] of [
      ['portal_a:5101', 'portal_b:b5101'],
      ['portal_a:5107', 'portal_c:5107'],
      ['portal_a:5108', 'portal_b:b5108'],
    ]) {
      expect((await annonceDuPortail(t.db, a)).bien_uid).toBe((await annonceDuPortail(t.db, b)).bien_uid);
    }
    // Attached to the BAN number they stand at.
    expect((await annonceDuPortail(t.db, 'portal_a:5101')).cle_ban).toBe(numeros[0].cle_ban);
    expect((await annonceDuPortail(t.db, 'portal_a:5115')).cle_ban).toBe(preMarche.cle_ban);
  });

  it('estimer_bien: the comparable properties online, their drops in the window and the withdrawals', async () => {
    const res = await estimer({ type: 'appartement', surface: 45, insee: '75111' });
    expect(res.statusCode, res.body).toBe(200);
    const e = res.json();
    // P1 (once, at 10 000), P2 9 000, P3 11 000, P4 8 000, P7 at its online listing's 485 000 / 48.
    const enLigne = [10_000, 9_000, 11_000, 8_000, 485_000 / 48];
    expect(e.annonces_en_vente).toEqual({
      n: 5,
      prix_m2_median: 10_000,
      part_moins_cheres_pct:
        Math.round((enLigne.filter((p) => p < e.valeur.prix_m2).length / enLigne.length) * 1000) / 10,
    });
    // Followed in the 90 days: P1, P2, P3, P4, P5, P7 (not P6, withdrawn before). Dropped in them: P2 and P4.
    expect(e.baisses).toEqual({
      biens: 2,
      annonces_suivies: 6,
      baisse_mediane_pct: Math.round(mediane([(1 - 450_000 / 480_000) * 100, (1 - 440_000 / 462_000) * 100]) * 10) / 10,
      prix_m2_median_apres_baisse: 8_500,
      fenetre_jours: 90,
    });
    // P5 only: P7 is still online on portal_c, P6 went before the window.
    expect(e.retraits).toEqual({ biens: 1, dernier_prix_m2_median: 10_000, fenetre_jours: 90 });
    expect(e.sources.join(' ')).toMatch(/Annonces des portails/);
    expect(e).not.toHaveProperty('prix_m2_annonces');
  });

  it('estimer_bien: null and said when no listing is comparable', async () => {
    const e = (await estimer({ type: 'appartement', surface: 150, insee: '75111' })).json();
    expect([e.annonces_en_vente, e.baisses, e.retraits]).toEqual([null, null, null]);
    expect(e.limites.join(' ')).toMatch(/aucune annonce comparable \(appartements de 105 à 195 m²/);
  });

  it('secteur: the private sellers of the postal code, counted once, never named', async () => {
    const res = await get('/codes-postaux/75011/secteur?detail=true');
    expect(res.statusCode, res.body).toBe(200);
    const p = res.json().particuliers;
    const p4 = (await annonceDuPortail(t.db, 'portal_a:5104')).id;
    const p8 = (await annonceDuPortail(t.db, 'portal_a:5108')).id;
    expect(p).toMatchObject({
      echelle: 'secteur',
      n_plus_50_jours: 1,
      duree_moyenne_jours: Math.round((jours('2025-05-10') + jours('2025-10-01')) / 2),
      n_avec_baisse: 1,
      qualite: { n: 2, donnees_du: '2025-10-30' },
    });
    expect(p.annonces).toEqual([
      {
        id: p4,
        lien: null,
        titre: 'Particulier vend T2, appelez le [téléphone masqué]',
        prix: 440_000,
        surface: 55,
        commune: 'Paris 11e Arrondissement',
        parue_depuis_jours: 173,
        derniere_baisse_le: '2025-09-01',
        type_vendeur: 'particulier',
      },
      expect.objectContaining({ id: p8, parue_depuis_jours: 29, derniere_baisse_le: null, lien: null }),
    ]);
    const texte = JSON.stringify(res.json());
    expect(texte).not.toMatch(/Lefèvre|lefevre|06 12 34|06\.12|@/);
    expect(res.json().limites.join(' ')).toMatch(/lien servi avec la portée lien_origine/);
    // Asked again, the answer is kept in the service's memory; the same input with lien_origine has the links all the
    // same (not the answer kept for the key without the scope), and the key without it still has none.
    expect((await get('/codes-postaux/75011/secteur?detail=true')).json().particuliers.annonces[0].lien).toBeNull();
    const avec = (await get('/codes-postaux/75011/secteur?detail=true', cleLien)).json();
    expect(avec.particuliers.annonces[0].lien).toBe('https://www.portal-a.example/annonces/5104');
    expect((await get('/codes-postaux/75011/secteur?detail=true', cleLien)).json().particuliers.annonces[0].lien).toBe(
      'https://www.portal-a.example/annonces/5104',
    );
    expect((await get('/codes-postaux/75011/secteur?detail=true')).json().particuliers.annonces[0].lien).toBeNull();
    // Without detail: the figures, no list.
    expect((await get('/codes-postaux/75011/secteur')).json().particuliers.annonces).toBeNull();
  });

  it('secteur: the département when no private listing of the postal code is online for 50 days', async () => {
    const body = (await get('/codes-postaux/75012/secteur')).json();
    // P4, P8 and the flat of 75012: the private properties of Paris.
    expect(body.particuliers).toMatchObject({ echelle: 'departement', n_plus_50_jours: 1, qualite: { n: 3 } });
    expect(body.limites.join(' ')).toMatch(/aucun bien de particulier du 75012 en ligne depuis plus de 50 jours/);
  });

  it('secteur: an address with a listing online leaves the pre-market', async () => {
    const body = (await get('/codes-postaux/59000/secteur?detail=true')).json();
    expect(body.pre_marche_pur.n).toBe(avantPreMarche - 1);
    expect(body.pre_marche_pur.qualite.methode).toMatch(/1 car une annonce en ligne est rattachée/);
    expect(body.limites.join(' ')).not.toMatch(/Ni en vente/);
  });

  it('faits_adresse: the listings of the address, the latest, and what is on sale around', async () => {
    const res = await get(`/adresses/${numeros[0].cle_ban}/faits?champs=annonce,ilot`);
    expect(res.statusCode, res.body).toBe(200);
    const f = res.json();
    const p1 = (await annonceDuPortail(t.db, 'portal_a:5101')).id;
    // P1 (two portals, online) and P5 (withdrawn); P1 seen last, by its main listing.
    expect(f.annonce).toMatchObject({
      n_actives: 1,
      n_total: 2,
      derniere: {
        id: p1,
        lien: null,
        statut: 'actif',
        type: 'appartement',
        parue_le: '2025-08-15',
        retire_le: null,
        prix: 400_000,
        surface: 40,
        prix_m2: 10_000,
        type_vendeur: 'pro',
        agence: { nom: 'AGENCE DU CANAL', enseigne: null, siren: '552100554' },
      },
      qualite: { n: 2, donnees_du: '2025-10-30' },
    });
    expect(f.ilot.en_vente).toBe(true);
    const avec = (await get(`/adresses/${numeros[0].cle_ban}/faits?champs=annonce`, cleLien)).json();
    expect(avec.annonce.derniere.lien).toBe('https://www.portal-a.example/annonces/5101');

    // A private seller's listing: no identity, no agency; a direct sale around.
    const prive = (await get(`/adresses/${numeros[3].cle_ban}/faits?champs=annonce,ilot`)).json();
    expect(prive.annonce.derniere).toMatchObject({ type_vendeur: 'particulier', agence: null, prix: 440_000 });
    expect(prive.ilot.vente_directe).toBe(true);
    expect(JSON.stringify(prive)).not.toMatch(/Lefèvre|@/);

    // An address of Latresne: no listing there, nothing on sale around.
    const vide = (await get('/adresses/33234_z008_00018_ter/faits?champs=annonce,ilot')).json();
    expect(vide.annonce).toMatchObject({ n_actives: 0, n_total: 0, derniere: null });
    expect([vide.ilot.en_vente, vide.ilot.vente_directe]).toEqual([false, false]);
  });
});
