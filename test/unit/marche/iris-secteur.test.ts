import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Operation } from '../../../domain/catalogue.ts';
import { VENTE_UN_LOGEMENT } from '../../../domain/marche/agregats.ts';
import { reconstruireDerives } from '../../../domain/marche/derives.ts';
import { marcheOperations } from '../../../domain/marche/operations.ts';
import { loadSandbox } from '../../../domain/sandbox/load.ts';
import { containsPoint, type ZoneGeometry } from '../../../lib/geometrie.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

// prix_iris and secteur on the demonstration territory loaded into the live data (secteur has no sandbox), each
// figure recomputed here from the raw rows: the outlines and sales for the quarters, the DPE, sales and listings for
// the pre-market, the listings for the private sellers.

let t: TestApp;
let cle: string;

beforeAll(async () => {
  t = await createTestApp({ operations: marcheOperations as Operation[] });
  await loadSandbox(t.db, { dataset: 'live' });
  cle = (await t.organisation({ acces: 'usage' })).cle;
}, 180_000);
afterAll(async () => {
  await t?.close();
});

const get = async (url: string) => {
  const res = await t.call('GET', url, cle);
  return { status: res.statusCode, body: res.json() };
};

const mediane = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const k = Math.floor(s.length / 2);
  return s.length % 2 ? s[k] : (s[k - 1] + s[k]) / 2;
};

describe('prix_iris', () => {
  it('prices each quarter of Latresne from the sales inside its outline, beside the commune price', async () => {
    const { status, body } = await get('/communes/33234/iris');
    expect(status, JSON.stringify(body)).toBe(200);
    const { rows: contours } = await t.db.query<{ code: string; geometrie: ZoneGeometry }>(
      `SELECT code, geometrie FROM iris WHERE dataset = 'live' AND insee = '33234' ORDER BY code`,
    );
    expect(body.donnees.map((d: { code_iris: string }) => d.code_iris)).toEqual(contours.map((c) => c.code));
    expect(body.credits.debites).toBe(contours.length);
    const { rows: annees } = await t.db.query<{ m: number }>(
      `SELECT max(millesime)::int AS m FROM dvf_millesimes WHERE dataset = 'live'`,
    );
    const millesime = annees[0].m;
    const { rows: ventes } = await t.db.query<{
      type: string;
      millesime: number;
      prix_m2: number;
      lat: number;
      lon: number;
    }>(
      `SELECT CASE WHEN 'appartement' = ANY(m.types_locaux) THEN 'appartement' ELSE 'maison' END AS type,
              m.millesime, m.prix_m2::float8 AS prix_m2, m.lat, m.lon
         FROM dvf_mutations m WHERE m.dataset = 'live' AND m.insee = '33234' AND m.lat IS NOT NULL AND ${VENTE_UN_LOGEMENT}`,
    );
    const bareme = (await get('/communes/33234/prix')).body.bareme;
    let vus = 0;
    for (const c of contours) {
      const item = body.donnees.find((d: { code_iris: string }) => d.code_iris === c.code);
      for (const type of ['appartement', 'maison']) {
        const dedans = ventes.filter(
          (v) => v.type === type && v.millesime >= millesime - 1 && containsPoint(c.geometrie, v.lon, v.lat),
        );
        const commune = bareme
          .filter((b: { type: string; prix_m2: number | null }) => b.type === type && b.prix_m2 !== null)
          .at(-1);
        const p = item[type];
        if (dedans.length === 0 && !commune) {
          expect(p).toBeNull();
          continue;
        }
        vus++;
        expect(p.n_ventes_recentes, `${c.code} ${type}`).toBe(dedans.length);
        expect(p.n_ventes).toBe(dedans.filter((v) => v.millesime === millesime).length);
        expect(p.prix_m2_commune).toBe(commune?.prix_m2 ?? null);
        const local = dedans.length ? mediane(dedans.map((v) => v.prix_m2)) : 0;
        if (dedans.length >= 10) {
          expect(p).toMatchObject({ label: 'mesure', poids_local: 1, prix_m2: Math.round(local) });
        } else {
          const poids = dedans.length / (dedans.length + 10);
          expect(p.label).toBe('estime');
          expect(p.poids_local).toBeCloseTo(poids, 3);
          expect(p.prix_m2).toBe(Math.round(poids * local + (1 - poids) * commune.prix_m2));
        }
      }
    }
    expect(vus).toBeGreaterThan(0);
    expect(body.donnees[0].geometrie).toBeUndefined();
  });

  it('serves one quarter by its code, with its outline on request; 404 for an unknown code', async () => {
    const { rows } = await t.db.query<{ code: string; geometrie: unknown }>(
      `SELECT code, geometrie FROM iris WHERE dataset = 'live' ORDER BY code LIMIT 1`,
    );
    const { status, body } = await get(`/iris/${rows[0].code}?geometrie=true`);
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.donnees).toHaveLength(1);
    expect(body.donnees[0].geometrie).toEqual(rows[0].geometrie);
    expect(body.credits.debites).toBe(1);
    const absent = await get('/iris/339990000');
    expect(absent.status).toBe(404);
    expect(absent.body.code).toBe('ressource_absente');
  });
});

interface Dpe {
  cle_ban: string;
  code_postal: string;
  etabli_le: string;
  etiquette: string;
  type_batiment: string | null;
  numero_dpe: string;
}

/** The pre-market of a postal code recomputed from the raw DPE, sales and listings online. */
async function preMarche(cp: string) {
  const { rows: dpe } = await t.db.query<Dpe>(
    `SELECT cle_ban, code_postal, to_char(etabli_le, 'YYYY-MM-DD') AS etabli_le, etiquette, type_batiment, numero_dpe
       FROM dpe WHERE dataset = 'live'`,
  );
  const reference = dpe
    .map((d) => d.etabli_le)
    .sort()
    .at(-1)!;
  const debut = new Date(Date.parse(reference) - 90 * 86_400_000).toISOString().slice(0, 10);
  const dernier = new Map<string, Dpe>();
  for (const d of dpe) {
    if (!d.cle_ban || d.code_postal !== cp || !['maison', 'appartement'].includes(d.type_batiment ?? '')) continue;
    if (d.etabli_le <= debut) continue;
    const avant = dernier.get(d.cle_ban);
    if (
      !avant ||
      d.etabli_le > avant.etabli_le ||
      (d.etabli_le === avant.etabli_le && d.numero_dpe > avant.numero_dpe)
    ) {
      dernier.set(d.cle_ban, d);
    }
  }
  const { rows: ventes } = await t.db.query<{ cle_ban: string; date: string }>(
    `SELECT cle_ban, to_char(date_mutation, 'YYYY-MM-DD') AS date FROM dvf_mutations
      WHERE dataset = 'live' AND cle_ban IS NOT NULL`,
  );
  const { rows: annonces } = await t.db.query<{ cle_ban: string }>(
    `SELECT cle_ban FROM annonces WHERE dataset = 'live' AND statut = 'actif' AND code_postal = $1
        AND cle_ban IS NOT NULL`,
    [cp],
  );
  const vendues = [...dernier.values()].filter(
    (d) => !ventes.some((v) => v.cle_ban === d.cle_ban && v.date >= d.etabli_le),
  );
  const libres = vendues.filter((d) => !annonces.some((a) => a.cle_ban === d.cle_ban));
  return { libres, enVente: vendues.length - libres.length, recents: dernier.size };
}

/** The private sellers' properties online of a postal code, from the raw listings and their drops. */
async function particuliers(cp: string) {
  const { rows } = await t.db.query<{ bien_uid: string; jours: number | null; baisses: number }>(
    `SELECT a.bien_uid,
            floor(extract(epoch FROM a.vu_le - (a.premiere_parution::timestamp AT TIME ZONE 'UTC')) / 86400)::int
              AS jours,
            (SELECT count(*) FROM annonces_evenements e
              WHERE e.dataset = 'live' AND e.annonce_id = a.id AND e.genre = 'baisse_prix')::int AS baisses
       FROM annonces a
      WHERE a.dataset = 'live' AND a.statut = 'actif' AND a.type_vendeur = 'particulier' AND a.code_postal = $1`,
    [cp],
  );
  const biens = new Map<string, { jours: number; baisse: boolean }>();
  for (const r of rows) {
    const b = biens.get(r.bien_uid) ?? { jours: 0, baisse: false };
    biens.set(r.bien_uid, { jours: Math.max(b.jours, r.jours ?? 0), baisse: b.baisse || r.baisses > 0 });
  }
  return [...biens.values()];
}

describe('secteur', () => {
  it('counts the recent individual DPE neither on sale nor sold since, and their F/G; the private sellers', async () => {
    const attendu = await preMarche('59000');
    expect(attendu.recents).toBeGreaterThan(0);
    const { status, body } = await get('/codes-postaux/59000/secteur');
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ cp: '59000', commune: 'Lille', departement: '59' });
    expect(body.pre_marche_pur.n).toBe(attendu.libres.length);
    expect(body.pre_marche_pur.passoires).toBe(attendu.libres.filter((d) => ['F', 'G'].includes(d.etiquette)).length);
    expect(body.pre_marche_pur.qualite.methode).toMatch(new RegExp(`${attendu.enVente} car une annonce en ligne`));
    // The demonstration's private sellers of Lille, each property once.
    const biens = await particuliers('59000');
    expect(biens.some((b) => b.jours > 50)).toBe(true);
    expect(body.particuliers).toMatchObject({
      echelle: 'secteur',
      n_plus_50_jours: biens.filter((b) => b.jours > 50).length,
      duree_moyenne_jours: Math.round(biens.reduce((s, b) => s + b.jours, 0) / biens.length),
      n_avec_baisse: biens.filter((b) => b.baisse).length,
      annonces: null,
      qualite: { n: biens.length },
    });
    expect(JSON.stringify(body)).not.toMatch(/@|vendeur_nom|telephone/);
    expect(body.credits.debites).toBe(2);
  });

  it('drops an address once a sale is recorded there after its DPE', async () => {
    const avant = await preMarche('59000');
    const cible = avant.libres[0];
    const { rowCount } = await t.db.query(
      `UPDATE dvf_mutations SET cle_ban = $1, date_mutation = $2::date + 10
        WHERE dataset = 'live' AND id_mutation = (SELECT id_mutation FROM dvf_mutations
                                                   WHERE dataset = 'live' AND insee = '59350' LIMIT 1)`,
      [cible.cle_ban, cible.etabli_le],
    );
    expect(rowCount).toBe(1);
    await reconstruireDerives(t.db, 'live');
    // Another input than the first call's: the service keeps an answer 6 h in memory, keyed by its input.
    const { body } = await get('/codes-postaux/59000/secteur?detail=true');
    expect(body.pre_marche_pur.n).toBe(avant.libres.length - 1);
    // With detail: the private sellers' listings, unnamed, without contacts.
    expect(body.particuliers.annonces).toHaveLength(body.particuliers.qualite.n);
    for (const a of body.particuliers.annonces) {
      expect(Object.keys(a).sort()).toEqual(
        [
          'commune',
          'derniere_baisse_le',
          'id',
          'lien',
          'parue_depuis_jours',
          'prix',
          'surface',
          'titre',
          'type_vendeur',
        ].sort(),
      );
      expect(a.type_vendeur).toBe('particulier');
      expect(a.titre ?? '').not.toMatch(/@|\d{2}[ .]?\d{2}[ .]?\d{2}[ .]?\d{2}[ .]?\d{2}/);
    }
    expect((await preMarche('59000')).libres).toHaveLength(avant.libres.length - 1);
  });

  it('answers 404 for a postal code no commune has', async () => {
    const { status, body } = await get('/codes-postaux/00000/secteur');
    expect(status).toBe(404);
    expect(body.code).toBe('commune_introuvable');
  });
});
