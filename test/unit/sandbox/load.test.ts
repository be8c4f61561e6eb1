import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queryable } from '../../../db/client.ts';
import { SANDBOX_COMMUNES } from '../../../domain/platform/sandbox.ts';
import { FICTIF, SANDBOX_SOURCES } from '../../../domain/sandbox/generate.ts';
import { loadSandbox, TABLES_CHARGEES, type SandboxLoadReport } from '../../../domain/sandbox/load.ts';
import { loyerCommune, loyersCommune, TYPES_LOGEMENT } from '../../../domain/loyers/loyers.ts';
import type { Regle } from '../../../domain/plu/lecture.ts';
import { LECTURE_VERSION } from '../../../domain/urbanisme/lectures.ts';
import { PARAMETRE_DEMONSTRATION, servedSource, SOURCE_DEMONSTRATION } from '../../../domain/qualite.ts';
import { zoneAbc } from '../../../domain/zonage-abc/zone.ts';
import { createTestApp, type TestApp } from '../../support/app.ts';

// The sandbox loaded through the real importers into a fresh database, then read back.

/** Every row of the dataset, timestamps included: a rewrite of an unchanged row would show. */
async function snapshot(db: Queryable, dataset: string): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of TABLES_CHARGEES) {
    const { rows } = await db.query<{ r: string }>(
      `SELECT row_to_json(t)::text AS r FROM ${table} t WHERE dataset = $1 ORDER BY 1`,
      [dataset],
    );
    out[table] = rows.map((row) => row.r);
  }
  return out;
}

async function parCommune(db: Queryable, sql: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ insee: string; n: number }>(sql);
  return Object.fromEntries(SANDBOX_COMMUNES.map((c) => [c, rows.find((r) => r.insee === c)?.n ?? 0]));
}

let t: TestApp;
let first: SandboxLoadReport;

beforeAll(async () => {
  t = await createTestApp();
  first = await loadSandbox(t.db, { dataset: 'sandbox' });
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe('loadSandbox (sandbox dataset)', () => {
  it('imports every generated file through its importer, without a rejected row', () => {
    expect(first.ignorees).toEqual([]);
    expect(new Set(first.imports.map((i) => i.source))).toEqual(new Set(['communes', ...SANDBOX_SOURCES]));
    for (const i of first.imports) {
      expect(i.lus, `${i.source} ${i.fichier}`).toBeGreaterThan(0);
      expect(i.rejetes, `${i.source} ${i.fichier}`).toEqual([]);
      expect(i.gardes, `${i.source} ${i.fichier}`).toBe(i.lus);
    }
    expect(first.rejets).toBe(0);
  });

  it('holds the five communes only, each with streets and a few hundred numbers', async () => {
    const { rows } = await t.db.query(`SELECT insee FROM communes WHERE dataset = 'sandbox' ORDER BY insee`);
    expect(rows.map((r) => r.insee)).toEqual([...SANDBOX_COMMUNES].sort());
    const numeros = await parCommune(
      t.db,
      `SELECT insee, count(*)::int AS n FROM adresses WHERE dataset = 'sandbox' AND type = 'numero' GROUP BY insee`,
    );
    const voies = await parCommune(
      t.db,
      `SELECT insee, count(*)::int AS n FROM adresses WHERE dataset = 'sandbox' AND type = 'voie' GROUP BY insee`,
    );
    for (const insee of SANDBOX_COMMUNES) {
      expect(numeros[insee], insee).toBeGreaterThanOrEqual(150);
      expect(numeros[insee], insee).toBeLessThanOrEqual(600);
      expect(voies[insee], insee).toBeGreaterThanOrEqual(24);
      expect(voies[insee], insee).toBeLessThanOrEqual(40);
    }
  });

  it('places every address within a few km of its commune’s real centre', async () => {
    const { rows } = await t.db.query<{ insee: string; km: number }>(
      `SELECT insee, max(earth_distance(ll_to_earth(a.lat, a.lon), ll_to_earth(c.lat, c.lon))) / 1000 AS km
         FROM adresses a
         JOIN (VALUES ('33234', 44.7808, -0.4942), ('33001', 45.0156, -0.1275), ('75111', 48.8591, 2.38),
                      ('59350', 50.6311, 3.0571), ('67482', 48.5734, 7.7521)) c(code, lat, lon) ON c.code = a.insee
        WHERE a.dataset = 'sandbox' GROUP BY insee`,
    );
    expect(rows).toHaveLength(5);
    for (const r of rows) expect(r.km, r.insee).toBeLessThan(r.insee === '75111' ? 1.2 : 3);
  });

  it('has sales 2018-2025 at BAN numbers, at plausible prices, and none in Strasbourg (Alsace-Moselle)', async () => {
    const ventes = await parCommune(
      t.db,
      `SELECT insee, count(*)::int AS n FROM dvf_mutations WHERE dataset = 'sandbox' GROUP BY insee`,
    );
    expect(ventes['67482']).toBe(0);
    for (const insee of ['33234', '33001', '75111', '59350']) expect(ventes[insee], insee).toBeGreaterThanOrEqual(40);
    const { rows: annees } = await t.db.query(
      `SELECT millesime FROM dvf_millesimes WHERE dataset = 'sandbox' ORDER BY millesime`,
    );
    expect(annees.map((r) => r.millesime)).toEqual([2018, 2019, 2020, 2021, 2022, 2023, 2024, 2025]);
    // Sales at a number are attached to it, by street code and number.
    const { rows: sans } = await t.db.query(
      `SELECT id_mutation FROM dvf_mutations
        WHERE dataset = 'sandbox' AND adresse_numero IS NOT NULL AND cle_ban IS NULL`,
    );
    expect(sans).toEqual([]);
    const { rows: prix } = await t.db.query<{ insee: string; mediane: number; atypiques: number }>(
      `SELECT insee, percentile_cont(0.5) WITHIN GROUP (ORDER BY prix_m2) AS mediane,
              count(*) FILTER (WHERE prix_atypique OR surface_atypique)::int AS atypiques
         FROM dvf_mutations WHERE dataset = 'sandbox' AND prix_m2 IS NOT NULL GROUP BY insee`,
    );
    const bornes: Record<string, [number, number]> = {
      '75111': [8500, 12_500],
      '59350': [2800, 4500],
      '33234': [2800, 4800],
      '33001': [1400, 2600],
    };
    for (const p of prix) {
      expect(p.mediane, p.insee).toBeGreaterThan(bornes[p.insee][0]);
      expect(p.mediane, p.insee).toBeLessThan(bornes[p.insee][1]);
      expect(p.atypiques, p.insee).toBe(0);
    }
    const { rows: types } = await t.db.query(
      `SELECT DISTINCT unnest(types_locaux) AS t FROM dvf_mutations WHERE dataset = 'sandbox' ORDER BY 1`,
    );
    expect(types.map((r) => r.t)).toEqual(['appartement', 'dependance', 'maison']);
  });

  it('has DPE of every class in every commune, Strasbourg included, at BAN numbers', async () => {
    const { rows } = await t.db.query<{ insee: string; classes: string }>(
      `SELECT insee, string_agg(DISTINCT etiquette, '' ORDER BY etiquette) AS classes
         FROM dpe WHERE dataset = 'sandbox' GROUP BY insee ORDER BY insee`,
    );
    expect(rows.map((r) => r.insee)).toEqual([...SANDBOX_COMMUNES].sort());
    for (const r of rows) expect(r.classes, r.insee).toBe('ABCDEFG');
    const { rows: horsBan } = await t.db.query(
      `SELECT d.numero_dpe FROM dpe d LEFT JOIN adresses a ON a.dataset = d.dataset AND a.cle_ban = d.cle_ban
        WHERE d.dataset = 'sandbox' AND a.cle_ban IS NULL`,
    );
    expect(horsBan).toEqual([]);
    const { rows: dates } = await t.db.query(
      `SELECT min(etabli_le)::text AS min, max(etabli_le)::text AS max FROM dpe WHERE dataset = 'sandbox'`,
    );
    // From July 2021 (the current method), but the pre-market history (parts/pre-marche.ts), which reaches back to
    // 2018 with DPE of the former method: the observatory publishes those too.
    expect(dates[0].min >= '2018-07-01' && dates[0].max <= '2025-12-31').toBe(true);
    const { rows: recents } = await t.db.query(
      `SELECT count(*)::int AS n FROM dpe WHERE dataset = 'sandbox' AND etabli_le < '2021-07-01' AND numero_dpe NOT LIKE '____S9%'`,
    );
    expect(recents[0].n).toBe(0);
  });

  it('has audits of F and G dwellings, linked to their DPE and address', async () => {
    const { rows } = await t.db.query(
      `SELECT a.numero_audit, a.classe_initiale, a.classe_visee, a.cle_ban, a.pack_pre_vente, d.etiquette,
              d.cle_ban AS cle_dpe
         FROM dpe_audits a JOIN dpe d ON d.dataset = a.dataset AND d.numero_dpe = a.numero_dpe
        WHERE a.dataset = 'sandbox'`,
    );
    const { rows: total } = await t.db.query(`SELECT count(*)::int AS n FROM dpe_audits WHERE dataset = 'sandbox'`);
    expect(rows).toHaveLength(total[0].n);
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const r of rows) {
      expect(['F', 'G']).toContain(r.etiquette);
      expect(r.classe_initiale).toBe(r.etiquette);
      expect(r.classe_visee < r.classe_initiale).toBe(true);
      expect(r.cle_ban).toBe(r.cle_dpe);
    }
    expect(rows.some((r) => r.pack_pre_vente)).toBe(true);
    expect(rows.some((r) => !r.pack_pre_vente)).toBe(true);
  });

  it('has permits in every commune, attached to BAN numbers, a company applicant named and a private one not', async () => {
    const permis = await parCommune(
      t.db,
      `SELECT insee, count(*)::int AS n FROM permis WHERE dataset = 'sandbox' GROUP BY insee`,
    );
    for (const insee of SANDBOX_COMMUNES) expect(permis[insee], insee).toBeGreaterThanOrEqual(8);
    const { rows } = await t.db.query(
      `SELECT demandeur_personne_physique AS pp, demandeur_denomination AS denom, demandeur_siren AS siren, cle_ban
         FROM permis WHERE dataset = 'sandbox'`,
    );
    expect(rows.every((r) => r.cle_ban !== null)).toBe(true);
    expect(rows.some((r) => r.pp)).toBe(true);
    expect(rows.filter((r) => r.pp).every((r) => r.denom === null && r.siren === null)).toBe(true);
    expect(rows.some((r) => !r.pp && r.denom?.startsWith('SCI ') && r.siren)).toBe(true);
  });

  it('has civil companies at sandbox addresses, each with its notices', async () => {
    const { rows } = await t.db.query(
      `SELECT u.siren, u.denomination, u.etat, e.cle_ban, e.insee,
              (SELECT array_agg(categorie ORDER BY date_parution) FROM avis_bodacc b
                WHERE b.dataset = u.dataset AND u.siren = ANY (b.sirens)) AS avis
         FROM unites_legales u JOIN etablissements e ON e.dataset = u.dataset AND e.siren = u.siren AND e.siege
        WHERE u.dataset = 'sandbox' AND u.societe_civile`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(15);
    expect(new Set(rows.map((r) => r.insee))).toEqual(new Set(SANDBOX_COMMUNES));
    for (const r of rows) {
      expect(r.denomination.endsWith(FICTIF.societe), r.siren).toBe(true);
      expect(r.cle_ban, r.siren).not.toBeNull();
      expect(r.avis?.[0], r.siren).toBe('creation');
    }
    const cessees = rows.filter((r) => r.etat === 'C');
    expect(cessees).toHaveLength(1);
    expect(cessees[0].avis.at(-1)).toBe('radiation');
    const { rows: avis } = await t.db.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE cle_ban IS NULL)::int AS sans_adresse,
              count(*) FILTER (WHERE NOT societe_civile AND categorie <> 'depot_comptes')::int AS autres
         FROM avis_bodacc WHERE dataset = 'sandbox'`,
    );
    expect(avis[0]).toMatchObject({ sans_adresse: 0, autres: 0 });
  });

  it('names no natural person anywhere in the sandbox data', async () => {
    const { rows: personnes } = await t.db.query(
      `SELECT siren, denomination, sigle FROM unites_legales WHERE dataset = 'sandbox' AND personne_physique`,
    );
    expect(personnes.length).toBeGreaterThan(0);
    expect(personnes.every((p) => p.denomination === null && p.sigle === null)).toBe(true);
    const { rows: enseignes } = await t.db.query(
      `SELECT e.siret FROM etablissements e JOIN unites_legales u ON u.dataset = e.dataset AND u.siren = e.siren
        WHERE e.dataset = 'sandbox' AND u.personne_physique AND (e.enseigne IS NOT NULL OR e.voie IS NOT NULL)`,
    );
    expect(enseignes).toEqual([]);
    const { rows: avis } = await t.db.query(
      `SELECT id FROM avis_bodacc WHERE dataset = 'sandbox' AND porte_sur_personne_physique`,
    );
    expect(avis).toEqual([]);
    // The generator names no one; common first names and surnames are looked for in every stored value all the same.
    const noms = [
      'Martin',
      'Bernard',
      'Dubois',
      'Thomas',
      'Robert',
      'Richard',
      'Petit',
      'Durand',
      'Leroy',
      'Moreau',
      'Simon',
      'Laurent',
      'Lefebvre',
      'Michel',
      'Garcia',
      'David',
      'Bertrand',
      'Roux',
      'Vincent',
      'Fournier',
      'Morel',
      'Girard',
      'André',
      'Mercier',
      'Dupont',
      'Lambert',
      'Bonnet',
      'François',
      'Martinez',
      'Jean',
      'Pierre',
      'Marie',
      'Philippe',
      'Nathalie',
      'Isabelle',
      'Sylvie',
      'Catherine',
      'Nicolas',
      'Christophe',
      'Stéphane',
      'Julien',
      'Camille',
      'Léa',
      'Manon',
      'Chloé',
      'Lucas',
      'Hugo',
      'Louis',
      'Gabriel',
      'Jules',
      'Paul',
      'Anne',
      'Jacques',
      'Alain',
      'Monique',
      'Jacqueline',
      'Gérard',
      'Daniel',
      'Patrick',
      'Olivier',
      'Sophie',
      'Emma',
      'Léo',
    ];
    const motif = new RegExp(`(?<!\\p{L})(${noms.join('|')})(?!\\p{L})`, 'iu');
    const snap = await snapshot(t.db, 'sandbox');
    const trouves = Object.entries(snap).flatMap(([table, lignes]) =>
      lignes.filter((l) => motif.test(l)).map((l) => `${table}: ${motif.exec(l)![0]} in ${l.slice(0, 200)}`),
    );
    expect(trouves).toEqual([]);
  });

  it('has IRIS and zoning over the five communes', async () => {
    const iris = await parCommune(
      t.db,
      `SELECT insee, count(*)::int AS n FROM iris WHERE dataset = 'sandbox' GROUP BY insee`,
    );
    expect(iris).toEqual({ '33234': 1, '33001': 1, '75111': 4, '59350': 4, '67482': 4 });
    // Every address lies in a zone of the zoning (boxes tested: the zones are rectangles).
    const { rows } = await t.db.query(
      `SELECT a.cle_ban FROM adresses a
        WHERE a.dataset = 'sandbox' AND a.type = 'numero'
          AND NOT EXISTS (SELECT 1 FROM zones_urbanisme z WHERE z.dataset = a.dataset
                            AND a.lon BETWEEN z.bbox_xmin AND z.bbox_xmax AND a.lat BETWEEN z.bbox_ymin AND z.bbox_ymax)`,
    );
    expect(rows).toEqual([]);
  });

  it('has every zone’s rules document and its reading in lire_plu’s cache, each quotation on its page', async () => {
    const { rows: zones } = await t.db.query<{ libelle: string; url: string; page: number }>(
      `SELECT DISTINCT libelle, split_part(reglement_url, '#page=', 1) AS url,
              split_part(reglement_url, '#page=', 2)::int AS page
         FROM zones_urbanisme WHERE dataset = 'sandbox'`,
    );
    // The distinct zones of the five communes' grids (parts/gpu.ts).
    expect(zones.length).toBe(23);
    for (const z of zones) {
      const { rows } = await t.db.query<{ pages: string[]; contenu: { regles: Regle[]; citations_ecartees: number } }>(
        `SELECT p.pages, l.contenu FROM reglements_pdf p
           JOIN lectures_plu l ON l.document_sha256 = p.sha256 AND l.zone = $2 AND l.version = $3
          WHERE p.url = $1`,
        [z.url, z.libelle, LECTURE_VERSION],
      );
      expect(rows, `${z.libelle} ${z.url}`).toHaveLength(1);
      const { pages, contenu } = rows[0];
      expect(new URL(z.url).hostname).toBe('demonstration.invalid');
      expect(pages[z.page - 1]).toMatch(new RegExp(`ZONE ${z.libelle}\\n`));
      expect(contenu.citations_ecartees).toBe(0);
      expect(contenu.regles.map((r) => r.theme).sort()).toEqual(
        ['annexes', 'emprise_sol', 'hauteur', 'limites_separatives', 'piscines'].sort(),
      );
      for (const r of contenu.regles) {
        // The PDF's text holds the quotation on the rule's page (lines wrapped where the page wraps them).
        expect(pages[r.page - 1].replace(/\s+/g, ' '), r.citation).toContain(r.citation);
        expect(r).toMatchObject({ page: z.page, a_confirmer: false, lien: `${z.url}#page=${z.page}` });
      }
    }
  });

  it('has rent indicators of every type and the A/B/C zoning for the five communes, as the domains read them', async () => {
    const bornes: Record<string, [number, number]> = {
      '75111': [24, 38],
      '59350': [12, 20],
      '67482': [11, 19],
      '33234': [9, 16],
      '33001': [6.5, 12],
    };
    for (const insee of SANDBOX_COMMUNES) {
      const loyers = await loyersCommune(t.db, 'sandbox', insee);
      expect(Object.keys(loyers).sort(), insee).toEqual([...TYPES_LOGEMENT].sort());
      for (const l of Object.values(loyers)) {
        expect(l.edition, insee).toBe(2025);
        expect(l.commune?.endsWith(FICTIF.loyer), insee).toBe(true);
        expect(l.bas_m2 < l.loyer_m2 && l.loyer_m2 < l.haut_m2, `${insee} ${l.type_logement}`).toBe(true);
      }
      const appartement = loyers.appartement!;
      expect(appartement.loyer_m2, insee).toBeGreaterThan(bornes[insee][0]);
      expect(appartement.loyer_m2, insee).toBeLessThan(bornes[insee][1]);
      expect(await loyerCommune(t.db, 'sandbox', insee, 'appartement')).toEqual(appartement);
    }
    // Abzac's few listings borrow from its group of communes; Paris 11e's flats are its own, its houses are not.
    expect((await loyerCommune(t.db, 'sandbox', '33001', 'appartement'))?.nature).toBe('predit_maille');
    expect((await loyerCommune(t.db, 'sandbox', '75111', 'appartement'))?.nature).toBe('observe_commune');
    expect((await loyerCommune(t.db, 'sandbox', '75111', 'maison'))?.nature).toBe('predit_maille');
    const zones: Record<string, string | undefined> = {};
    for (const insee of SANDBOX_COMMUNES) zones[insee] = (await zoneAbc(t.db, 'sandbox', insee))?.zone;
    expect(zones).toEqual({ '33234': 'B1', '33001': 'C', '75111': 'Abis', '59350': 'A', '67482': 'A' });
    expect(await zoneAbc(t.db, 'sandbox', '75111')).toMatchObject({
      insee_zonage: '75056',
      en_vigueur_le: '2024-07-05',
    });
  });

  it('changes nothing when loaded again', async () => {
    const avant = await snapshot(t.db, 'sandbox');
    const lectures = 'SELECT row_to_json(l)::text AS r FROM lectures_plu l ORDER BY 1';
    const lecturesAvant = (await t.db.query(lectures)).rows;
    const again = await loadSandbox(t.db, { dataset: 'sandbox' });
    expect(again.rejets).toBe(0);
    expect(await snapshot(t.db, 'sandbox')).toEqual(avant);
    expect((await t.db.query(lectures)).rows).toEqual(lecturesAvant);
  }, 120_000);
});

describe('loadSandbox (live dataset, demonstration data)', () => {
  let sandboxAvant: Record<string, string[]>;
  let live: SandboxLoadReport;

  beforeAll(async () => {
    sandboxAvant = await snapshot(t.db, 'sandbox');
    live = await loadSandbox(t.db, { dataset: 'live' });
  }, 180_000);

  it('loads the same territory into the live data, the whole administrative split with it', async () => {
    expect(live.rejets).toBe(0);
    expect(live.ignorees).toEqual([]);
    const { rows } = await t.db.query(
      `SELECT dataset, count(*)::int AS n FROM adresses GROUP BY dataset ORDER BY dataset`,
    );
    expect(rows[0].n).toBe(rows[1].n);
    const { rows: communes } = await t.db.query(`SELECT count(*)::int AS n FROM communes WHERE dataset = 'live'`);
    expect(communes[0].n).toBeGreaterThan(30_000);
    expect(await snapshot(t.db, 'sandbox')).toEqual(sandboxAvant);
  });

  it('labels the live data as demonstration data', async () => {
    const { rows } = await t.db.query('SELECT valeur FROM parametres WHERE nom = $1', [PARAMETRE_DEMONSTRATION]);
    expect(rows).toEqual([{ valeur: SOURCE_DEMONSTRATION }]);
    const q = { qualite: { source: 'DVF (DGFiP, Etalab)' } };
    expect((await servedSource(t.db, 'live', q)).qualite.source).toBe('démonstration (données fictives)');
    expect((await servedSource(t.db, 'sandbox', q)).qualite.source).toBe('DVF (DGFiP, Etalab)');
  });

  it('changes nothing when loaded again, and leaves the communes as they are', async () => {
    const avant = await snapshot(t.db, 'live');
    const again = await loadSandbox(t.db, { dataset: 'live' });
    expect(again.ignorees).toEqual([{ source: 'communes', motif: 'communes déjà présentes dans les données live' }]);
    expect(await snapshot(t.db, 'live')).toEqual(avant);
  }, 120_000);
});

describe('the sandbox served to a pk_test_ key', () => {
  it('answers from the sandbox without debit and with restants null, and 403 hors_bac_a_sable outside', async () => {
    const { cle } = await t.organisation({}, { mode: 'test' });
    expect(cle.startsWith('pk_test_')).toBe(true);
    const { rows } = await t.db.query<{ libelle: string; cle_ban: string }>(
      `SELECT libelle, cle_ban FROM adresses WHERE dataset = 'sandbox' AND insee = '33234' AND type = 'numero'
        ORDER BY cle_ban LIMIT 1`,
    );
    const res = await t.call('GET', `/adresses/recherche?q=${encodeURIComponent(rows[0].libelle)}`, cle);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.credits).toMatchObject({ debites: 0, restants: null });
    expect(body.resultat?.candidats?.[0]?.cle_ban ?? body.candidats?.[0]?.cle_ban).toBe(rows[0].cle_ban);
    // Marseille: a point far from the five communes.
    const dehors = await t.call('GET', '/adresses/inverse?lat=43.2965&lon=5.3698', cle);
    expect(dehors.statusCode).toBe(403);
    expect(dehors.json().code).toBe('hors_bac_a_sable');
  });
});
