import { transaction, type Db, type Queryable } from '../../db/client.ts';
import { plier } from '../adresses/normaliser.ts';
import { communeByCode, departementOf } from '../communes.ts';
import type { Dataset } from '../platform/sandbox.ts';
import { marcheDe, mediane, MANDATS_MIN } from './marche.ts';

/**
 * The agencies' derived tables (db/migrations/036_agences.sql), rebuilt whole for a dataset after the imports they
 * depend on (SIRENE, BODACC, listings: scripts/import.ts and the sandbox load call it), in one transaction: readers see
 * the previous state or the new one, never half of it. Reads never aggregate listings (DESIGN.md section 13).
 */

/**
 * APE codes of real-estate agencies: 68.31Z « Agences immobilières » (transactions, rental management by agents), and
 * 68.32A « Administration d'immeubles et autres biens immobiliers » (property managers, who list and let too); with
 * their NAF rev. 1 forerunners (70.3A, 70.3C), which units ceased before 2008 still carry. Not the owners of their
 * own property (68.20A/B: SCI letting), nor dealers (68.10Z: buying and selling on their own account).
 */
export const APE_AGENCES = ['68.31Z', '68.32A', '70.3A', '70.3C'] as const;

/** Mail providers: an address there tells nothing of the agency's own domain (`heberge`). */
const HEBERGEURS = new Set([
  'gmail.com',
  'googlemail.com',
  'hotmail.com',
  'hotmail.fr',
  'outlook.com',
  'outlook.fr',
  'live.fr',
  'live.com',
  'msn.com',
  'yahoo.fr',
  'yahoo.com',
  'icloud.com',
  'me.com',
  'orange.fr',
  'wanadoo.fr',
  'free.fr',
  'sfr.fr',
  'neuf.fr',
  'laposte.net',
  'bbox.fr',
  'aol.com',
  'gmx.fr',
  'protonmail.com',
  'proton.me',
]);

/** The derived tables of the agencies, each with a `dataset` column (emptied with the demonstration data). */
export const TABLES_AGENCES = ['agences', 'agences_activite', 'agences_marche', 'agences_calculs'];

/** The importers (their CLI names) after which the agencies are rebuilt. */
export const SOURCES_AGENCES: readonly string[] = ['sirene', 'bodacc', 'annonces'];

/** The label of a sole trader whom SIRENE does not diffuse: no name of theirs is served, not even a listing's. */
export const NON_DIFFUSE = 'Entrepreneur individuel (identité non diffusée)';

const jour = (d: string) => Date.parse(`${d}T00:00:00Z`) / 86_400_000;
const moisDe = (d: string) => d.slice(0, 7);
function moisSuivant(mois: string): string {
  const [a, m] = mois.split('-').map(Number) as [number, number];
  return m === 12 ? `${a + 1}-01` : `${a}-${String(m + 1).padStart(2, '0')}`;
}
const arrondi1 = (x: number) => Math.round(x * 10) / 10;

interface Mandat {
  vendeur: string;
  siren: string | null;
  enseigne: string | null;
  insee: string;
  exclusif: boolean;
  debut: string;
  fin: string;
  baisse: string | null;
}

export interface LigneActivite {
  insee: string;
  mois: string;
  vendeur: string;
  siren: string | null;
  enseigne: string | null;
  mandats: number;
  exclusifs: number;
  duree_mediane_j: number | null;
  part_baisses_pct: number | null;
  part_marche_pct: number;
}

/**
 * The monthly activity of each seller in each commune. A mandate is a property (bien_uid) a seller lists, whatever
 * the portals: it counts in every month it is online at least one day, from its first publication (or first
 * snapshot) to its withdrawal, or to the latest snapshot while it is online. Its days online in a month are counted
 * from its first publication to its withdrawal or the month's end, whichever comes first; it counts as reduced in a
 * month when a price drop of it was seen before the month's end. Months before the first snapshot are not computed.
 */
export function activiteDe(mandats: Mandat[], premierMois: string): LigneActivite[] {
  const groupes = new Map<string, { m: Omit<LigneActivite, 'part_marche_pct'>; durees: number[]; baisses: number }>();
  for (const m of mandats) {
    for (let mois = moisDe(m.debut) < premierMois ? premierMois : moisDe(m.debut); mois <= moisDe(m.fin);) {
      const suivant = moisSuivant(mois);
      const cle = `${m.insee}|${mois}|${m.vendeur}`;
      let g = groupes.get(cle);
      if (!g) {
        g = {
          m: {
            insee: m.insee,
            mois,
            vendeur: m.vendeur,
            siren: m.siren,
            enseigne: m.enseigne,
            mandats: 0,
            exclusifs: 0,
            duree_mediane_j: null,
            part_baisses_pct: null,
          },
          durees: [],
          baisses: 0,
        };
        groupes.set(cle, g);
      }
      g.m.mandats++;
      if (m.exclusif) g.m.exclusifs++;
      const finMois = Math.min(jour(m.fin), jour(`${suivant}-01`) - 1);
      g.durees.push(Math.max(0, finMois - jour(m.debut)));
      if (m.baisse !== null && m.baisse < `${suivant}-01`) g.baisses++;
      mois = suivant;
    }
  }
  const lignes = [...groupes.values()].map(({ m, durees, baisses }) => ({
    ...m,
    duree_mediane_j: mediane(durees),
    part_baisses_pct: arrondi1((100 * baisses) / m.mandats),
  }));
  // Market shares per commune and month.
  const parMarche = new Map<string, typeof lignes>();
  for (const l of lignes) {
    const k = `${l.insee}|${l.mois}`;
    const g = parMarche.get(k);
    if (g) g.push(l);
    else parMarche.set(k, [l]);
  }
  const out: LigneActivite[] = [];
  for (const groupe of parMarche.values()) {
    const marche = marcheDe(groupe);
    for (const l of groupe) out.push({ ...l, part_marche_pct: marche.parts_pct.get(l.vendeur)! });
  }
  return out;
}

/** Inserts rows as JSON batches: one statement per 1000 rows. */
async function inserer(db: Queryable, table: string, colonnes: Array<[string, string]>, rows: object[]) {
  const noms = colonnes.map(([c]) => c).join(', ');
  const types = colonnes.map(([c, t]) => `${c} ${t}`).join(', ');
  for (let i = 0; i < rows.length; i += 1000) {
    await db.query(`INSERT INTO ${table} (${noms}) SELECT ${noms} FROM jsonb_to_recordset($1::jsonb) AS r(${types})`, [
      JSON.stringify(rows.slice(i, i + 1000)),
    ]);
  }
}

interface Unite {
  siren: string;
  denomination: string | null;
  sigle: string | null;
  categorie_juridique: string | null;
  ape: string | null;
  personne_physique: boolean;
  diffusion_partielle: boolean;
  par_ape: boolean;
  signes: string[] | null;
  insee: string[] | null;
  codes_postaux: string[] | null;
}

export interface ReconstructionAgences {
  agences: number;
  lignes_activite: number;
  marches: number;
  dernier_mois: string | null;
}

/** Rebuilds the agencies of `dataset`: agencies, their monthly activity, each commune's market. */
export async function reconstruireAgences(db: Db, dataset: Dataset): Promise<ReconstructionAgences> {
  return transaction(db, async (client) => {
    // One rebuild at a time per dataset: two imports ending together would otherwise interleave their deletes.
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('agences:' || $1))`, [dataset]);
    const bornes = await client.query<{ premier: string | null; dernier: string | null }>(
      `SELECT to_char(min(entree_le) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS premier,
              to_char(max(vu_le) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS dernier
         FROM annonces WHERE dataset = $1`,
      [dataset],
    );
    const { premier, dernier } = bornes.rows[0]!;

    const mandats = (
      await client.query<Mandat>(
        `SELECT a.vendeur_cle AS vendeur,
                max(a.annonceur->>'siren') AS siren,
                mode() WITHIN GROUP (ORDER BY coalesce(a.annonceur->>'enseigne', a.annonceur->>'nom')) AS enseigne,
                mode() WITHIN GROUP (ORDER BY a.insee) AS insee,
                coalesce(bool_or(a.annonceur->>'mandat' = 'exclusif'), false) AS exclusif,
                to_char(min(coalesce(a.premiere_parution, (a.entree_le AT TIME ZONE 'UTC')::date)), 'YYYY-MM-DD') AS debut,
                to_char(CASE WHEN bool_or(a.statut <> 'retire') THEN $2::date
                             ELSE (coalesce(max(a.retire_le), max(a.vu_le)) AT TIME ZONE 'UTC')::date END,
                        'YYYY-MM-DD') AS fin,
                to_char((min(b.le) AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS baisse
           FROM annonces a
           LEFT JOIN LATERAL (SELECT min(e.le) AS le FROM annonces_evenements e
                               WHERE e.dataset = a.dataset AND e.annonce_id = a.id AND e.genre = 'baisse_prix') b ON true
          WHERE a.dataset = $1 AND a.type_vendeur = 'pro' AND a.insee IS NOT NULL AND a.vendeur_cle IS NOT NULL
            AND a.vendeur_cle <> 'pro'
          GROUP BY a.vendeur_cle, a.bien_uid`,
        [dataset, dernier],
      )
    ).rows;

    // Units: by activity code (the unit's or an establishment's), or named by SIREN as a seller of listings.
    const sirensVendeurs = [...new Set(mandats.map((m) => m.siren).filter((s): s is string => !!s))];
    const unites = (
      await client.query<Unite>(
        `WITH par_ape AS (
                SELECT siren FROM unites_legales WHERE dataset = $1 AND ape = ANY($2::text[])
                UNION SELECT siren FROM etablissements WHERE dataset = $1 AND ape = ANY($2::text[])),
              choisies AS (SELECT siren FROM par_ape UNION SELECT unnest($3::text[]))
         SELECT u.siren, u.denomination, u.sigle, u.categorie_juridique, u.ape, u.personne_physique,
                u.diffusion_partielle, u.siren IN (SELECT siren FROM par_ape) AS par_ape,
                e.signes, e.insee, e.codes_postaux
           FROM choisies c
           JOIN unites_legales u ON u.dataset = $1 AND u.siren = c.siren
           LEFT JOIN LATERAL (
                 SELECT array_agg(DISTINCT x.enseigne) FILTER (WHERE x.enseigne IS NOT NULL) AS signes,
                        array_agg(DISTINCT x.insee) FILTER (WHERE x.insee IS NOT NULL) AS insee,
                        array_agg(DISTINCT x.code_postal) FILTER (WHERE x.code_postal IS NOT NULL) AS codes_postaux
                   FROM etablissements x
                  WHERE x.dataset = $1 AND x.siren = u.siren
                    AND (x.etat = 'A' OR NOT EXISTS (SELECT 1 FROM etablissements y
                                                      WHERE y.dataset = $1 AND y.siren = u.siren AND y.etat = 'A'))) e
             ON true`,
        [dataset, APE_AGENCES, sirensVendeurs],
      )
    ).rows;
    const masque = new Set(unites.filter((u) => u.personne_physique && u.diffusion_partielle).map((u) => u.siren));
    for (const m of mandats) if (m.siren && masque.has(m.siren)) m.enseigne = NON_DIFFUSE;

    const activite = premier && dernier ? activiteDe(mandats, moisDe(premier)) : [];
    const dernierMois = dernier ? moisDe(dernier) : null;

    // What the listings say of each agency: brands, domains, contacts, listings online.
    const sirens = unites.map((u) => u.siren);
    const reseaux = (
      await client.query<{
        siren: string;
        enseigne: string;
        nom_commercial: string | null;
        insee: string | null;
        nb_annonces: number;
        origine: string | null;
      }>(
        `SELECT a.annonceur->>'siren' AS siren, coalesce(a.annonceur->>'enseigne', a.annonceur->>'nom') AS enseigne,
                mode() WITHIN GROUP (ORDER BY a.annonceur->>'nom') AS nom_commercial,
                mode() WITHIN GROUP (ORDER BY a.insee) AS insee, count(*)::int AS nb_annonces,
                mode() WITHIN GROUP (ORDER BY a.annonceur->>'siren_origine') AS origine
           FROM annonces a
          WHERE a.dataset = $1 AND a.type_vendeur = 'pro' AND a.annonceur->>'siren' = ANY($2::text[])
            AND coalesce(a.annonceur->>'enseigne', a.annonceur->>'nom') IS NOT NULL
          GROUP BY 1, 2 ORDER BY 1, nb_annonces DESC, 2`,
        [dataset, sirens],
      )
    ).rows;
    const contacts = (
      await client.query<{ siren: string; genre: 'telephone' | 'email' | 'texte'; valeur: string; n: number }>(
        `SELECT siren, genre, valeur, count(*)::int AS n FROM (
                SELECT a.annonceur->>'siren' AS siren, 'telephone' AS genre, a.annonceur->>'telephone' AS valeur
                  FROM annonces a WHERE a.dataset = $1 AND a.annonceur->>'siren' = ANY($2::text[])
                UNION ALL
                SELECT a.annonceur->>'siren', 'email', lower(a.annonceur->>'email')
                  FROM annonces a WHERE a.dataset = $1 AND a.annonceur->>'siren' = ANY($2::text[])
                UNION ALL
                -- A telephone may be read in the text of listings that publish none: the latest five are enough.
                SELECT siren, 'texte', description FROM (
                       SELECT a.annonceur->>'siren' AS siren, a.description,
                              row_number() OVER (PARTITION BY a.annonceur->>'siren' ORDER BY a.vu_le DESC, a.id) AS rang
                         FROM annonces a WHERE a.dataset = $1 AND a.annonceur->>'siren' = ANY($2::text[])
                          AND a.annonceur->>'telephone' IS NULL AND a.description IS NOT NULL) d
                 WHERE rang <= 5) c
          WHERE valeur IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1, 2, n DESC, 3`,
        [dataset, sirens],
      )
    ).rows;
    const actives = (
      await client.query<{ siren: string; insee: string | null; code_postal: string | null; n: number }>(
        `SELECT a.annonceur->>'siren' AS siren, a.insee, a.code_postal, count(*)::int AS n
           FROM annonces a
          WHERE a.dataset = $1 AND a.statut = 'actif' AND a.annonceur->>'siren' = ANY($2::text[])
          GROUP BY 1, 2, 3 ORDER BY 1, n DESC, 2, 3`,
        [dataset, sirens],
      )
    ).rows;
    const calculeLe = new Date().toISOString();

    const grouper = <T extends { siren: string }>(rows: T[]) => {
      const m = new Map<string, T[]>();
      for (const r of rows) {
        const liste = m.get(r.siren);
        if (liste) liste.push(r);
        else m.set(r.siren, [r]);
      }
      return m;
    };
    const reseauxPar = grouper(reseaux);
    const contactsPar = grouper(contacts);
    const activesPar = grouper(actives);
    const activitePar = grouper(
      activite.filter((l) => l.siren !== null && l.mois === dernierMois) as Array<LigneActivite & { siren: string }>,
    );
    const communesPar = grouper(
      activite.filter((l) => l.siren !== null).map((l) => ({ siren: l.siren!, insee: l.insee })),
    );

    const lignesAgences = unites.map((u) => {
      const cache = masque.has(u.siren);
      const r = reseauxPar.get(u.siren) ?? [];
      const c = contactsPar.get(u.siren) ?? [];
      const a = activitePar.get(u.siren) ?? [];
      const act = activesPar.get(u.siren) ?? [];
      const insee = new Set([...(u.insee ?? []), ...(communesPar.get(u.siren) ?? []).map((x) => x.insee)]);
      const codesPostaux = new Set([
        ...(u.codes_postaux ?? []),
        ...act.flatMap((x) => (x.code_postal ? [x.code_postal] : [])),
      ]);
      const departements = new Set([...insee].map(departementOf));

      const reseauxServis = r.map((x) => {
        const commune = x.insee ? communeByCode(x.insee) : null;
        return {
          enseigne: cache ? null : x.enseigne,
          nom_commercial: cache ? null : x.nom_commercial,
          identifiant_portail: null,
          commune_principale: commune?.nom ?? null,
          departement_principal: x.insee ? departementOf(x.insee) : null,
          nb_annonces: x.nb_annonces,
          rapprochement: x.origine === 'sirene' ? 'sirene_nom_code_postal' : 'siren_annonce',
          calcule_le: calculeLe,
        };
      });
      const domaines = new Map<string, number>();
      for (const x of c.filter((y) => y.genre === 'email')) {
        const domaine = x.valeur.split('@')[1];
        if (domaine) domaines.set(domaine, (domaines.get(domaine) ?? 0) + x.n);
      }
      const domainesServis = cache
        ? []
        : [...domaines]
            .sort((x, y) => y[1] - x[1] || x[0].localeCompare(y[0]))
            .map(([domaine, n]) => ({
              domaine,
              genre: HEBERGEURS.has(domaine) ? ('heberge' as const) : ('propre' as const),
              source: 'courriel des annonces',
              observations: n,
            }));
      const telephone = c.find((y) => y.genre === 'telephone')?.valeur ?? null;
      const extrait =
        telephone === null
          ? (c
              .filter((y) => y.genre === 'texte')
              .map((y) => y.valeur.match(/(?:\+33\s?|\b0)[1-9](?:[\s.-]?\d{2}){4}\b/)?.[0])
              .find(Boolean) ?? null)
          : null;
      const email = c.find((y) => y.genre === 'email')?.valeur ?? null;
      const connus = telephone !== null || extrait !== null || email !== null;
      const contactsPro = !connus
        ? null
        : cache
          ? { telephone: null, email: null, site: null, origine: null, retirees: true }
          : {
              telephone: telephone ?? extrait,
              email,
              site: null,
              origine: telephone !== null || email !== null ? 'published' : 'desc_extracted',
              retirees: false,
            };
      const mandatsTotal = a.reduce((s, x) => s + x.mandats, 0);
      const activiteServie =
        a.length === 0 && act.length === 0
          ? null
          : {
              mois: dernierMois,
              mandats: mandatsTotal,
              exclusifs: a.reduce((s, x) => s + x.exclusifs, 0),
              communes: a
                .sort((x, y) => y.mandats - x.mandats || x.insee.localeCompare(y.insee))
                .map((x) => ({
                  insee: x.insee,
                  enseigne: x.enseigne,
                  mandats: x.mandats,
                  exclusifs: x.exclusifs,
                  duree_mediane_j: x.duree_mediane_j,
                  part_baisses_pct: x.part_baisses_pct,
                })),
              annonces_actives: act.reduce((s, x) => s + x.n, 0),
              annonces_par_commune: act.map((x) => ({
                commune: x.insee ? (communeByCode(x.insee)?.nom ?? null) : null,
                code_postal: x.code_postal,
                nb_annonces: x.n,
              })),
              qualite: {
                n: mandatsTotal,
                provenance: 'mesure',
                incertitude: null,
                drapeaux: mandatsTotal < MANDATS_MIN ? ['peu_d_observations'] : [],
                methode:
                  'Mandats en portefeuille le dernier mois calculé : biens distincts en ligne au moins un jour du mois, d’après les relevés des portails.',
                donnees_du: dernier,
                source: 'annonces des portails (relevés)',
              },
            };
      const noms = cache
        ? []
        : [u.denomination, u.sigle, ...(u.signes ?? []), ...r.flatMap((x) => [x.enseigne, x.nom_commercial])];
      return {
        dataset,
        siren: u.siren,
        motif: u.par_ape ? 'ape' : 'annonces',
        denomination: u.denomination,
        sigle: u.sigle,
        categorie_juridique: u.categorie_juridique,
        ape: u.ape,
        entrepreneur_individuel: u.personne_physique,
        diffusion_partielle: u.diffusion_partielle,
        noms: [...new Set(noms.filter((n): n is string => !!n).map(plier))].join(' | '),
        reseaux_noms: cache ? '' : [...new Set(r.map((x) => plier(x.enseigne)))].join(' | '),
        insee: [...insee].sort(),
        codes_postaux: [...codesPostaux].sort(),
        departements: [...departements].sort(),
        reseaux: reseauxServis,
        domaines: domainesServis,
        contacts_pro: contactsPro,
        activite: activiteServie,
        calcule_le: calculeLe,
      };
    });

    const marches = new Map<string, LigneActivite[]>();
    for (const l of activite) {
      const k = `${l.insee}|${l.mois}`;
      const g = marches.get(k);
      if (g) g.push(l);
      else marches.set(k, [l]);
    }
    const lignesMarches = [...marches.values()].map((g) => {
      const m = marcheDe(g);
      return {
        dataset,
        insee: g[0]!.insee,
        mois: g[0]!.mois,
        n_agences: m.n_agences,
        mandats_total: m.mandats_total,
        part_leader_pct: m.part_leader_pct,
        hhi: m.hhi,
      };
    });

    for (const table of TABLES_AGENCES.filter((t) => t !== 'agences_calculs')) {
      await client.query(`DELETE FROM ${table} WHERE dataset = $1`, [dataset]);
    }
    await inserer(
      client,
      'agences',
      [
        ['dataset', 'text'],
        ['siren', 'text'],
        ['motif', 'text'],
        ['denomination', 'text'],
        ['sigle', 'text'],
        ['categorie_juridique', 'text'],
        ['ape', 'text'],
        ['entrepreneur_individuel', 'boolean'],
        ['diffusion_partielle', 'boolean'],
        ['noms', 'text'],
        ['reseaux_noms', 'text'],
        ['insee', 'text[]'],
        ['codes_postaux', 'text[]'],
        ['departements', 'text[]'],
        ['reseaux', 'jsonb'],
        ['domaines', 'jsonb'],
        ['contacts_pro', 'jsonb'],
        ['activite', 'jsonb'],
        ['calcule_le', 'timestamptz'],
      ],
      lignesAgences,
    );
    await inserer(
      client,
      'agences_activite',
      [
        ['dataset', 'text'],
        ['insee', 'text'],
        ['mois', 'text'],
        ['vendeur', 'text'],
        ['siren', 'text'],
        ['enseigne', 'text'],
        ['mandats', 'integer'],
        ['exclusifs', 'integer'],
        ['duree_mediane_j', 'float8'],
        ['part_baisses_pct', 'float8'],
        ['part_marche_pct', 'float8'],
      ],
      activite.map((l) => ({ dataset, ...l })),
    );
    await inserer(
      client,
      'agences_marche',
      [
        ['dataset', 'text'],
        ['insee', 'text'],
        ['mois', 'text'],
        ['n_agences', 'integer'],
        ['mandats_total', 'integer'],
        ['part_leader_pct', 'float8'],
        ['hhi', 'float8'],
      ],
      lignesMarches,
    );
    await client.query(
      `INSERT INTO agences_calculs (dataset, dernier_mois, donnees_du, calcule_le) VALUES ($1, $2, $3, $4)
       ON CONFLICT (dataset) DO UPDATE SET dernier_mois = excluded.dernier_mois, donnees_du = excluded.donnees_du,
                                           calcule_le = excluded.calcule_le`,
      [dataset, dernierMois, dernier, calculeLe],
    );
    return {
      agences: lignesAgences.length,
      lignes_activite: activite.length,
      marches: lignesMarches.length,
      dernier_mois: dernierMois,
    };
  });
}
